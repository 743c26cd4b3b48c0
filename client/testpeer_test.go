package client_test

// An in-test stand-in for the other roles: testRelay speaks the relay side
// of turbotunnel (token, ClientID, encapsulation, KCP and smux server, echo),
// testProxy is a pion answerer that hands its DataChannels straight to the
// relay, and testBroker matches client polls with test proxies over HTTP.
// The client under test is the real one, talking to real WebRTC on loopback.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v5"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/leak"
	"github.com/flurrypt/flurry/messages"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// testRelay is the relay side of turbotunnel with an echo service: every
// smux stream echoes what it receives.
type testRelay struct {
	qpc      *turbotunnel.QueuePacketConn
	ln       *kcp.Listener
	wg       sync.WaitGroup
	mu       sync.Mutex
	sessions []*smux.Session
	closed   chan struct{}
}

func startTestRelay(tb testing.TB) *testRelay {
	tb.Helper()
	r := &testRelay{
		qpc:    turbotunnel.NewQueuePacketConn(turbotunnel.ClientID{}, 0, 0),
		closed: make(chan struct{}),
	}
	ln, err := kcp.ServeConn(nil, 0, 0, r.qpc)
	if err != nil {
		tb.Fatal(err)
	}
	r.ln = ln
	r.wg.Add(1)
	go r.acceptLoop()
	tb.Cleanup(r.Close)
	return r
}

func (r *testRelay) acceptLoop() {
	defer r.wg.Done()
	for {
		conn, err := r.ln.AcceptKCP()
		if err != nil {
			return
		}
		turbotunnel.ConfigureKCP(conn)
		sess, err := smux.Server(conn, turbotunnel.RelaySmuxConfig())
		if err != nil {
			conn.Close()
			continue
		}
		r.mu.Lock()
		r.sessions = append(r.sessions, sess)
		r.mu.Unlock()
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer conn.Close()
			// smux does not close a session whose connection failed: its
			// keepalive goroutine would live on until the keepalive timeout.
			defer sess.Close()
			for {
				st, err := sess.AcceptStream()
				if err != nil {
					return
				}
				r.wg.Add(1)
				go func() {
					defer r.wg.Done()
					defer st.Close()
					buf := make([]byte, 16<<10)
					_, _ = io.CopyBuffer(st, st, buf)
				}()
			}
		}()
	}
}

// serveCarrier runs one carrier (a proxy's DataChannel) until it fails or
// killed is closed: read the prefix, then packets both ways.
func (r *testRelay) serveCarrier(rw io.ReadWriter, killed <-chan struct{}) {
	br := bufio.NewReaderSize(rw, 64<<10)
	var prefix [2 * turbotunnel.TokenLen]byte
	if _, err := io.ReadFull(br, prefix[:]); err != nil {
		return
	}
	if !bytes.Equal(prefix[:turbotunnel.TokenLen], turbotunnel.Token[:]) {
		return
	}
	var id turbotunnel.ClientID
	copy(id[:], prefix[turbotunnel.TokenLen:])
	addr := net.Addr(id)

	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var out bytes.Buffer
		for {
			select {
			case <-done:
				return
			case <-killed:
				return
			case <-r.closed:
				return
			case p, ok := <-r.qpc.OutgoingQueue(addr):
				if !ok {
					return
				}
				out.Reset()
				_, _ = encapsulation.WriteData(&out, p)
				r.qpc.Restore(p)
				if _, err := rw.Write(out.Bytes()); err != nil {
					return
				}
			}
		}
	}()
	buf := make([]byte, 2048)
	for {
		n, err := encapsulation.ReadData(br, buf)
		if err != nil && !errors.Is(err, io.ErrShortBuffer) {
			break
		}
		select {
		case <-killed:
			continue // a dead proxy forwards nothing
		default:
		}
		r.qpc.QueueIncoming(buf[:n], addr)
	}
	close(done)
	wg.Wait()
}

func (r *testRelay) Close() {
	select {
	case <-r.closed:
		return
	default:
	}
	close(r.closed)
	r.ln.Close()
	r.mu.Lock()
	for _, s := range r.sessions {
		s.Close()
	}
	r.mu.Unlock()
	r.qpc.Close()
	r.wg.Wait()
}

// testProxy answers offers with pion on loopback and relays each
// DataChannel to a testRelay.
type testProxy struct {
	name   string
	relay  *testRelay
	api    *webrtc.API
	udp    *chaintest.BlackholeConn
	mux    *ice.UDPMuxDefault
	killed chan struct{}

	mu      sync.Mutex
	pcs     []*webrtc.PeerConnection
	served  atomic.Int64 // DataChannels opened
	stalled atomic.Bool  // see Stall
	wg      sync.WaitGroup
	once    sync.Once
}

func newTestProxy(tb testing.TB, name string, relay *testRelay) *testProxy {
	tb.Helper()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	p := &testProxy{name: name, relay: relay, udp: &chaintest.BlackholeConn{PacketConn: udp}, killed: make(chan struct{})}
	p.mux = ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: p.udp})
	var se webrtc.SettingEngine
	se.DetachDataChannels()
	se.SetICEUDPMux(p.mux)
	webrtcnet.LoopbackOnly(&se, nil)
	p.api = webrtc.NewAPI(webrtc.WithSettingEngine(se))
	tb.Cleanup(p.Close)
	return p
}

// answer takes an offer (session description JSON) and returns the answer.
func (p *testProxy) answer(ctx context.Context, offerJSON string) (string, error) {
	offer, err := messages.DecodeSessionDescription(offerJSON)
	if err != nil {
		return "", err
	}
	pc, err := p.api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	p.pcs = append(p.pcs, pc)
	p.mu.Unlock()
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		dc.OnOpen(func() {
			raw, err := dc.DetachWithDeadline()
			if err != nil {
				return
			}
			p.served.Add(1)
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer raw.Close()
				p.relay.serveCarrier(rawStream{raw, &p.stalled}, p.killed)
			}()
		})
	})
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer.SDP}); err != nil {
		return "", err
	}
	local, err := webrtcnet.LocalDescription(ctx, pc, webrtc.SDPTypeAnswer, hangGuard, false)
	if err != nil {
		return "", err
	}
	return messages.SessionDescription{Type: messages.SDPTypeAnswer, SDP: local.SDP}.Encode()
}

// rawStream gives a detached DataChannel the io.ReadWriter shape; while
// stalled is set it drops what passes both ways (the DataChannel stays
// open and ICE stays alive).
type rawStream struct {
	datachannel.ReadWriteCloserDeadliner
	stalled *atomic.Bool
}

func (s rawStream) Read(p []byte) (int, error) {
	for {
		n, err := s.ReadWriteCloserDeadliner.Read(p)
		if err != nil || !s.stalled.Load() {
			return n, err
		}
	}
}

func (s rawStream) Write(p []byte) (int, error) {
	if s.stalled.Load() {
		return len(p), nil
	}
	return s.ReadWriteCloserDeadliner.Write(p)
}

// CloseGracefully closes the proxy's peer connections: the client sees its
// DataChannels close at once.
func (p *testProxy) CloseGracefully() {
	p.mu.Lock()
	pcs := p.pcs
	p.pcs = nil
	p.mu.Unlock()
	for _, pc := range pcs {
		_ = pc.Close()
	}
}

// Kill makes the proxy vanish without a word: its UDP socket drops
// everything and it stops relaying, as a SIGKILLed proxy would.
func (p *testProxy) Kill() {
	p.udp.Blackhole()
	p.once.Do(func() { close(p.killed) })
}

// Stall makes the proxy stop relaying while its DataChannels stay open and
// ICE stays alive: a proxy whose path to the relay died.
func (p *testProxy) Stall() { p.stalled.Store(true) }

// Blackhole silences the proxy's UDP but keeps it answering offers: its
// DataChannels never open.
func (p *testProxy) Blackhole() { p.udp.Blackhole() }

func (p *testProxy) Close() {
	p.once.Do(func() { close(p.killed) })
	p.mu.Lock()
	pcs := p.pcs
	p.pcs = nil
	p.mu.Unlock()
	for _, pc := range pcs {
		_ = pc.GracefulClose()
	}
	p.wg.Wait()
	_ = p.mux.Close()
	_ = p.udp.Close()
}

// testBroker is an HTTP broker that hands each client poll to the next
// proxy in its list (round robin), skipping killed ones.
type testBroker struct {
	srv     *httptest.Server
	mu      sync.Mutex
	proxies []*testProxy
	next    int
	polls   atomic.Int64
	nats    []string // NAT type of each poll, guarded by mu
	offers  []string // offer of each poll, guarded by mu
}

func startTestBroker(tb testing.TB, proxies ...*testProxy) *testBroker {
	tb.Helper()
	b := &testBroker{proxies: proxies}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /client", b.handleClient)
	b.srv = httptest.NewServer(mux)
	tb.Cleanup(b.srv.Close)
	return b
}

// NATs returns the NAT types the client sent, in order.
func (b *testBroker) NATs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.nats...)
}

// Offers returns the offers (session description JSON) the client sent.
func (b *testBroker) Offers() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.offers...)
}

func (b *testBroker) URL() string { return b.srv.URL + "/" }

func (b *testBroker) pick() *testProxy {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range b.proxies {
		p := b.proxies[b.next%len(b.proxies)]
		b.next++
		select {
		case <-p.killed:
			continue
		default:
			return p
		}
	}
	return nil
}

func (b *testBroker) handleClient(w http.ResponseWriter, r *http.Request) {
	b.polls.Add(1)
	body, err := io.ReadAll(io.LimitReader(r.Body, messages.MaxBodySize))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	req, err := messages.DecodeClientPollRequest(body)
	if err == nil {
		b.mu.Lock()
		b.nats = append(b.nats, req.NAT)
		b.offers = append(b.offers, req.Offer)
		b.mu.Unlock()
	}
	var resp messages.ClientPollResponse
	switch p := b.pick(); {
	case err != nil:
		resp.Error = err.Error()
	case p == nil:
		resp.Error = messages.StrNoProxies
	default:
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		answer, err := p.answer(ctx, req.Offer)
		cancel()
		if err != nil {
			resp.Error = messages.StrTimedOut
		} else {
			resp.Answer = answer
		}
	}
	out, _ := resp.Encode()
	_, _ = w.Write(out)
}
