package loadgentest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/messages"
)

// FakeBroker is a minimal broker speaking Snowflake's wire format: proxies
// wait up to hold for an offer, a client takes the longest-waiting proxy
// (no NAT rules) and waits up to a second for its answer.
type FakeBroker struct {
	hold          time.Duration
	rejectPattern bool

	mu      sync.Mutex
	waiting []*fakeProxy             // guarded by mu
	matched map[string]chan<- string // guarded by mu; Sid -> the client's answer channel

	proxyPolls, clientPolls, Answers atomic.Int64
	Server                           *httptest.Server
}

type fakeProxy struct {
	sid   string
	offer chan string // buffered 1
}

// StartFakeBroker starts a broker that holds proxy polls for hold and
// matches clients with waiting proxies; with rejectPattern it tells every
// proxy its relay pattern is wrong. It stops with the test.
func StartFakeBroker(tb testing.TB, hold time.Duration, rejectPattern bool) *FakeBroker {
	tb.Helper()
	b := &FakeBroker{hold: hold, rejectPattern: rejectPattern, matched: make(map[string]chan<- string)}
	mux := http.NewServeMux()
	mux.HandleFunc("/proxy", b.serveProxy)
	mux.HandleFunc("/client", b.serveClient)
	mux.HandleFunc("/answer", b.serveAnswer)
	b.Server = httptest.NewServer(mux)
	tb.Cleanup(b.Server.Close)
	return b
}

func readAll(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, messages.MaxBodySize))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return nil, false
	}
	return body, true
}

// encoded drops the error of an encoder that cannot fail here (an empty
// body then fails the run under test loudly).
func encoded(b []byte, err error) []byte {
	if err != nil {
		return nil
	}
	return b
}

func (b *FakeBroker) serveProxy(w http.ResponseWriter, r *http.Request) {
	body, ok := readAll(w, r)
	if !ok {
		return
	}
	req, err := messages.DecodeProxyPollRequest(body)
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b.proxyPolls.Add(1)
	if b.rejectPattern || req.AcceptedRelayPattern == nil {
		_, _ = w.Write(encoded(messages.ProxyPollResponse{Status: messages.StatusIncorrectRelayPattern, NextPoll: 3600000}.Encode()))
		return
	}
	p := &fakeProxy{sid: req.Sid, offer: make(chan string, 1)}
	b.mu.Lock()
	b.waiting = append(b.waiting, p)
	b.mu.Unlock()
	t := time.NewTimer(b.hold)
	defer t.Stop()
	var offer string
	select {
	case offer = <-p.offer:
	case <-t.C:
	case <-r.Context().Done():
	}
	if offer == "" {
		b.mu.Lock()
		for i, q := range b.waiting {
			if q == p {
				b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
				p = nil
				break
			}
		}
		b.mu.Unlock()
		if p != nil { // taken by a client meanwhile: its offer is on the way
			offer = <-p.offer
		}
	}
	if offer == "" {
		_, _ = w.Write(encoded(messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20000}.Encode()))
		return
	}
	_, _ = w.Write(encoded(messages.ProxyPollResponse{
		Status: messages.StatusClientMatch, Offer: offer, NAT: messages.NATUnknown,
		NextPoll: 20000, RelayURL: "ws://127.0.0.1:8000/",
	}.Encode()))
}

func (b *FakeBroker) serveClient(w http.ResponseWriter, r *http.Request) {
	body, ok := readAll(w, r)
	if !ok {
		return
	}
	b.clientPolls.Add(1)
	req, err := messages.DecodeClientPollRequest(body)
	if err != nil {
		_, _ = w.Write(encoded(messages.ClientPollResponse{Error: err.Error()}.Encode()))
		return
	}
	answer := make(chan string, 1)
	b.mu.Lock()
	var p *fakeProxy
	if len(b.waiting) > 0 {
		p = b.waiting[0]
		b.waiting = b.waiting[1:]
		b.matched[p.sid] = answer
	}
	b.mu.Unlock()
	if p == nil {
		_, _ = w.Write(encoded(messages.ClientPollResponse{Error: messages.StrNoProxies}.Encode()))
		return
	}
	p.offer <- req.Offer
	t := time.NewTimer(time.Second)
	defer t.Stop()
	select {
	case a := <-answer:
		_, _ = w.Write(encoded(messages.ClientPollResponse{Answer: a}.Encode()))
	case <-t.C:
		b.mu.Lock()
		delete(b.matched, p.sid)
		b.mu.Unlock()
		_, _ = w.Write(encoded(messages.ClientPollResponse{Error: messages.StrTimedOut}.Encode()))
	}
}

func (b *FakeBroker) serveAnswer(w http.ResponseWriter, r *http.Request) {
	body, ok := readAll(w, r)
	if !ok {
		return
	}
	req, err := messages.DecodeProxyAnswerRequest(body)
	if err != nil || !bytes.Contains(body, []byte("a=candidate")) {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	b.Answers.Add(1)
	b.mu.Lock()
	ch, ok := b.matched[req.Sid]
	delete(b.matched, req.Sid)
	b.mu.Unlock()
	if !ok {
		_, _ = w.Write(encoded(messages.ProxyAnswerResponse{Status: messages.StatusClientGone}.Encode()))
		return
	}
	ch <- req.Answer
	_, _ = w.Write(encoded(messages.ProxyAnswerResponse{Status: messages.StatusSuccess}.Encode()))
}

// FakeRelay is a minimal Snowflake-style relay: WebSocket carriers that
// start with the token and a ClientID, one QueuePacketConn, one KCP
// listener and smux server sessions whose streams are forwarded to forward.
type FakeRelay struct {
	forward string
	qpc     *turbotunnel.QueuePacketConn
	ln      *kcp.Listener
	srv     *httptest.Server
	up      websocket.Upgrader

	Carriers, BadTokens atomic.Int64
	mu                  sync.Mutex
	ids                 map[turbotunnel.ClientID]int // guarded by mu
	closers             []io.Closer                  // guarded by mu
	done                chan struct{}
	wg                  sync.WaitGroup
}

// StartFakeRelay starts a relay that accepts carriers, runs KCP and smux
// over them and forwards every stream to forward. It stops with the test.
func StartFakeRelay(tb testing.TB, forward string) *FakeRelay {
	tb.Helper()
	r := &FakeRelay{
		forward: forward,
		qpc:     turbotunnel.NewQueuePacketConn(turbotunnel.ClientID{}, time.Minute, turbotunnel.MTU),
		ids:     make(map[turbotunnel.ClientID]int),
		done:    make(chan struct{}),
		up:      websocket.Upgrader{ReadBufferSize: 1024, WriteBufferSize: 1024},
	}
	ln, err := kcp.ServeConn(nil, 0, 0, r.qpc)
	if err != nil {
		tb.Fatal(err)
	}
	r.ln = ln
	r.wg.Go(r.acceptKCP)
	r.srv = httptest.NewServer(http.HandlerFunc(r.serveWS))
	tb.Cleanup(r.stop)
	return r
}

// URL is the relay's ws:// URL.
func (r *FakeRelay) URL() string { return "ws" + r.srv.URL[len("http"):] + "/" }

func (r *FakeRelay) track(c io.Closer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.done:
		c.Close()
		return false
	default:
	}
	r.closers = append(r.closers, c)
	return true
}

func (r *FakeRelay) stop() {
	r.srv.Close()
	r.mu.Lock()
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	for _, c := range r.closers {
		c.Close()
	}
	r.mu.Unlock()
	r.ln.Close()
	r.qpc.Close()
	r.wg.Wait()
}

func (r *FakeRelay) acceptKCP() {
	for {
		sess, err := r.ln.AcceptKCP()
		if err != nil {
			return
		}
		turbotunnel.ConfigureKCP(sess)
		if !r.track(sess) {
			return
		}
		mux, err := smux.Server(sess, turbotunnel.RelaySmuxConfig())
		if err != nil {
			sess.Close()
			continue
		}
		r.track(mux)
		r.wg.Go(func() {
			for {
				st, err := mux.AcceptStream()
				if err != nil {
					return
				}
				r.wg.Go(func() { r.forwardStream(st) })
			}
		})
	}
}

func (r *FakeRelay) forwardStream(st *smux.Stream) {
	defer st.Close()
	c, err := net.Dial("tcp", r.forward)
	if err != nil {
		return
	}
	defer c.Close()
	if !r.track(c) {
		return
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(c, st)
		c.Close()
	})
	_, _ = io.Copy(st, c)
	st.Close()
	c.Close()
	wg.Wait()
}

func (r *FakeRelay) serveWS(w http.ResponseWriter, req *http.Request) {
	ws, err := r.up.Upgrade(w, req, nil)
	if err != nil {
		return
	}
	defer ws.Close()
	if !r.track(ws.NetConn()) {
		return
	}
	br := bufio.NewReader(&messageStream{ws: ws})
	var prefix [2 * turbotunnel.TokenLen]byte
	if _, err := io.ReadFull(br, prefix[:]); err != nil {
		return
	}
	if !bytes.Equal(prefix[:turbotunnel.TokenLen], turbotunnel.Token[:]) {
		r.BadTokens.Add(1)
		return
	}
	var id turbotunnel.ClientID
	copy(id[:], prefix[turbotunnel.TokenLen:])
	r.Carriers.Add(1)
	r.mu.Lock()
	r.ids[id]++
	r.mu.Unlock()
	var addr net.Addr = id

	readerDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		out := r.qpc.OutgoingQueue(addr)
		var buf bytes.Buffer
		for {
			select {
			case <-readerDone:
				return
			case p, ok := <-out:
				if !ok {
					return
				}
				buf.Reset()
				_, _ = encapsulation.WriteData(&buf, p)
				r.qpc.Restore(p)
				if err := ws.WriteMessage(websocket.BinaryMessage, buf.Bytes()); err != nil {
					return
				}
			}
		}
	})
	buf := make([]byte, 2048)
	for {
		n, err := encapsulation.ReadData(br, buf)
		if err != nil && err != io.ErrShortBuffer {
			break
		}
		r.qpc.QueueIncoming(buf[:n], addr)
	}
	close(readerDone)
	ws.Close()
	wg.Wait()
}

// DistinctIDs counts the ClientIDs the relay has seen.
func (r *FakeRelay) DistinctIDs() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// StartSOCKS runs a SOCKS5 server on loopback that connects every request
// to its requested address (which must be loopback). If user is not empty
// it requires that username and password.
func StartSOCKS(tb testing.TB, user, pass string) (addr string, requests *atomic.Int64) {
	tb.Helper()
	requests = new(atomic.Int64)
	addr = loopback.Accept(tb, func(c net.Conn) { serveSOCKS(c, user, pass, requests) })
	return addr, requests
}

// SOCKS5 values the fake server speaks (RFC 1928, RFC 1929).
const (
	fakeNoAuth       = 0
	fakeUserPass     = 2
	fakeNoAcceptable = 0xff
	fakeConnect      = 1
	fakeIPv4         = 1
	fakeDomain       = 3
)

// serveSOCKS serves one SOCKS5 connection. Closing c ends it (the upstream
// connection closes with it).
func serveSOCKS(c net.Conn, user, pass string, requests *atomic.Int64) {
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if !socksAuthenticate(c, user, pass) {
		return
	}
	host, port, ok := readSOCKSConnect(c)
	if !ok {
		return
	}
	target := net.JoinHostPort(host, itoa(port))
	if !isLoopback(host) {
		_, _ = c.Write([]byte{5, 2, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	up, err := net.Dial("tcp", target)
	if err != nil {
		_, _ = c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
		return
	}
	defer up.Close()
	requests.Add(1)
	_, _ = c.Write([]byte{5, 0, 0, 1, 127, 0, 0, 1, 0, 0})
	_ = c.SetDeadline(time.Time{})
	var wg sync.WaitGroup
	wg.Go(func() {
		_, _ = io.Copy(up, c)
		up.Close()
	})
	_, _ = io.Copy(c, up)
	c.Close()
	wg.Wait()
}

// socksAuthenticate reads the client's methods and, with a user, checks
// its user and password (RFC 1929); it reports whether the client may go
// on.
func socksAuthenticate(c net.Conn, user, pass string) bool {
	var head [2]byte
	if _, err := io.ReadFull(c, head[:]); err != nil || head[0] != 5 {
		return false
	}
	methods := make([]byte, head[1])
	if _, err := io.ReadFull(c, methods); err != nil {
		return false
	}
	want := byte(fakeNoAuth)
	if user != "" {
		want = fakeUserPass
	}
	if !bytes.Contains(methods, []byte{want}) {
		_, _ = c.Write([]byte{5, fakeNoAcceptable})
		return false
	}
	_, _ = c.Write([]byte{5, want})
	if want != fakeUserPass {
		return true
	}
	var v [2]byte
	if _, err := io.ReadFull(c, v[:]); err != nil {
		return false
	}
	u := make([]byte, v[1])
	if _, err := io.ReadFull(c, u); err != nil {
		return false
	}
	if _, err := io.ReadFull(c, v[:1]); err != nil {
		return false
	}
	p := make([]byte, v[0])
	if _, err := io.ReadFull(c, p); err != nil {
		return false
	}
	if string(u) != user || string(p) != pass {
		_, _ = c.Write([]byte{1, 1})
		return false
	}
	_, _ = c.Write([]byte{1, 0})
	return true
}

// readSOCKSConnect reads a CONNECT request to an IPv4 address or a name.
func readSOCKSConnect(c net.Conn) (host string, port int, ok bool) {
	var req [4]byte
	if _, err := io.ReadFull(c, req[:]); err != nil || req[1] != fakeConnect {
		return "", 0, false
	}
	switch req[3] {
	case fakeIPv4:
		var a [4]byte
		if _, err := io.ReadFull(c, a[:]); err != nil {
			return "", 0, false
		}
		host = net.IP(a[:]).String()
	case fakeDomain:
		var n [1]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return "", 0, false
		}
		h := make([]byte, n[0])
		if _, err := io.ReadFull(c, h); err != nil {
			return "", 0, false
		}
		host = string(h)
	default:
		return "", 0, false
	}
	var p [2]byte
	if _, err := io.ReadFull(c, p[:]); err != nil {
		return "", 0, false
	}
	return host, int(p[0])<<8 | int(p[1]), true
}

func itoa(n int) string {
	var b [8]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}

// Context returns a context that ends when the test does, bounded so that a
// hang fails instead of blocking forever.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	tb.Cleanup(cancel)
	return ctx
}

// isLoopback reports whether host is a loopback address or localhost: the
// fake refuses the rest, as the load generator does before dialing.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// messageStream reads the data of consecutive WebSocket messages as one
// byte stream, as a relay reads a carrier. One goroutine reads.
type messageStream struct {
	ws *websocket.Conn
	r  io.Reader // current message, nil between messages
}

func (m *messageStream) Read(p []byte) (int, error) {
	for {
		if m.r == nil {
			typ, r, err := m.ws.NextReader()
			if err != nil {
				return 0, err
			}
			if typ != websocket.BinaryMessage && typ != websocket.TextMessage {
				continue
			}
			m.r = r
		}
		n, err := m.r.Read(p)
		if err == io.EOF {
			m.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		return n, err
	}
}
