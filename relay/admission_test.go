package relay

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	kcp "github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

// capturePacketConn records what a KCP client sends; it receives nothing.
type capturePacketConn struct {
	out    chan []byte
	closed chan struct{}
	once   sync.Once
}

func (c *capturePacketConn) ReadFrom([]byte) (int, net.Addr, error) {
	<-c.closed
	return 0, nil, net.ErrClosed
}

func (c *capturePacketConn) WriteTo(b []byte, _ net.Addr) (int, error) {
	select {
	case c.out <- append([]byte(nil), b...):
	default:
	}
	return len(b), nil
}

func (c *capturePacketConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}
func (c *capturePacketConn) LocalAddr() net.Addr              { return turbotunnel.ClientID{}.Addr() }
func (c *capturePacketConn) SetDeadline(time.Time) error      { return nil }
func (c *capturePacketConn) SetReadDeadline(time.Time) error  { return nil }
func (c *capturePacketConn) SetWriteDeadline(time.Time) error { return nil }

// clientFirstPacket returns the first packet a kcp-go and smux client with
// Snowflake's parameters sends when it opens a stream and writes data.
func clientFirstPacket(tb testing.TB, data []byte) []byte {
	tb.Helper()
	pc := &capturePacketConn{out: make(chan []byte, 16), closed: make(chan struct{})}
	defer pc.Close()
	id := turbotunnel.NewClientID()
	conn, err := kcp.NewConn2(id.Addr(), nil, 0, 0, pc)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	turbotunnel.ConfigureKCP(conn)
	sess, err := smux.Client(conn, turbotunnel.ClientSmuxConfig())
	if err != nil {
		tb.Fatal(err)
	}
	defer sess.Close()
	st, err := sess.OpenStream()
	if err != nil {
		tb.Fatal(err)
	}
	if len(data) > 0 {
		st.Write(data)
	}
	select {
	case p := <-pc.out:
		return p
	case <-time.After(10 * time.Second):
		tb.Fatal("kcp client sent nothing")
		return nil
	}
}

// kcpSegment builds one KCP segment.
func kcpSegment(conv uint32, cmd byte, sn uint32, data []byte) []byte {
	b := make([]byte, turbotunnel.KCPHeaderLen, turbotunnel.KCPHeaderLen+len(data))
	binary.LittleEndian.PutUint32(b, conv)
	b[4] = cmd
	binary.LittleEndian.PutUint16(b[6:], 128)
	binary.LittleEndian.PutUint32(b[12:], sn)
	binary.LittleEndian.PutUint32(b[20:], uint32(len(data)))
	return append(b, data...)
}

// nopPacket is a packet that passes the relay's first-packet check but
// opens no stream: KCP push sn 0 carrying a smux NOP frame.
func nopPacket(conv uint32) []byte {
	return kcpSegment(conv, turbotunnel.KCPCmdPush, 0, []byte{turbotunnel.SmuxVersion, 3, 0, 0, 0, 0, 0, 0})
}

func TestOpensSession(t *testing.T) {
	real := clientFirstPacket(t, []byte("hello"))
	if !opensSession(real) {
		t.Fatalf("kcp-go client's first packet % x refused", real)
	}
	ack := kcpSegment(7, 82, 0, nil)
	tests := []struct {
		name string
		p    []byte
		want bool
	}{
		{"nop frame", nopPacket(7), true},
		{"ack then push", append(ack, nopPacket(7)...), true},
		{"24 zero bytes", make([]byte, 24), false},
		{"empty push", kcpSegment(7, turbotunnel.KCPCmdPush, 0, nil), false},
		{"push sn 1", kcpSegment(7, turbotunnel.KCPCmdPush, 1, []byte{turbotunnel.SmuxVersion, 0, 0, 0}), false},
		{"ack only", ack, false},
		{"bad command", kcpSegment(7, 80, 0, []byte{turbotunnel.SmuxVersion}), false},
		{"smux version 1", kcpSegment(7, turbotunnel.KCPCmdPush, 0, []byte{1, 0, 0, 0}), false},
		{"two conversations", append(kcpSegment(8, 82, 0, nil), nopPacket(7)...), false},
		{"trailing bytes", append(nopPacket(7), 1, 2, 3), false},
		{"length beyond packet", real[:len(real)-1], false},
		{"short", real[:23], false},
	}
	for _, tt := range tests {
		if got := opensSession(tt.p); got != tt.want {
			t.Errorf("%s: opensSession = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func FuzzOpensSession(f *testing.F) {
	f.Add(clientFirstPacket(f, []byte("hello")))
	f.Add(nopPacket(1))
	f.Add(make([]byte, 24))
	f.Fuzz(func(t *testing.T, p []byte) {
		if opensSession(p) {
			// What passes parses: one conversation, segments that end
			// exactly at the end of the packet.
			conv := binary.LittleEndian.Uint32(p)
			for len(p) > 0 {
				if binary.LittleEndian.Uint32(p) != conv {
					t.Fatal("accepted two conversations")
				}
				p = p[turbotunnel.KCPHeaderLen+int(binary.LittleEndian.Uint32(p[20:])):]
			}
		}
	})
}

// dialFrom opens a WebSocket to wsURL from the loopback address local,
// with extra request headers.
func dialFrom(wsURL, local string, header http.Header) (*websocket.Conn, int, error) {
	d := websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		NetDialContext: (&net.Dialer{
			LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)},
		}).DialContext,
	}
	ws, resp, err := d.DialContext(context.Background(), wsURL, header)
	status := 0
	if resp != nil {
		status = resp.StatusCode
		resp.Body.Close()
	}
	return ws, status, err
}

// sendFirst opens a carrier from local and sends the token, id and one
// packet. The caller closes the returned connection.
func sendFirst(tb testing.TB, wsURL, local string, id turbotunnel.ClientID, pkt []byte) net.Conn {
	tb.Helper()
	conn, err := trySendFirst(wsURL, local, id, pkt)
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

func trySendFirst(wsURL, local string, id turbotunnel.ClientID, pkt []byte) (net.Conn, error) {
	ws, _, err := dialFrom(wsURL, local, nil)
	if err != nil {
		return nil, err
	}
	conn := wsconn.New(ws)
	msg := append(append([]byte(nil), turbotunnel.Token[:]...), id[:]...)
	var b bytes.Buffer
	encapsulation.WriteData(&b, pkt)
	if _, err := conn.Write(append(msg, b.Bytes()...)); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// waitEOF reads conn until the relay closes it (or 30 s pass).
func waitEOF(tb testing.TB, conn net.Conn) {
	tb.Helper()
	conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err := io.Copy(io.Discard, conn)
	if isTimeout(err) {
		tb.Fatal("relay did not close the carrier")
	}
	conn.Close()
}

// eventually polls cond until it holds, failing after 30 s.
func eventually(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestMalformedFirstPacketStartsNoSession(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1"})
	for _, pkt := range [][]byte{make([]byte, 24), kcpSegment(9, turbotunnel.KCPCmdPush, 0, nil)} {
		waitEOF(t, sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), pkt))
	}
	st := r.Stats()
	if st.SessionsRefused[refuseMalformed] != 2 || st.Sessions != 0 {
		t.Errorf("refused %v, sessions %d; want 2 malformed, 0 sessions", st.SessionsRefused, st.Sessions)
	}
}

func TestStreamlessSessionReclaimed(t *testing.T) {
	target := echoServer(t)
	r, wsURL := startRelay(t, Config{ForwardAddr: target, SessionOpenTimeout: time.Second})

	// An honest client whose carrier goes away keeps its session.
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	honest := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	echoRoundTrip(t, client, testPayload(10000), nil)
	honest.kill()
	<-honest.done

	// A session without stream or carrier goes within seconds.
	conn := sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), nopPacket(1))
	eventually(t, "the session starts", func() bool { return r.Stats().Sessions == 2 })
	conn.Close()
	eventually(t, "the streamless session is reclaimed", func() bool { return r.Stats().SessionsReclaimed == 1 })
	eventually(t, "it has ended", func() bool { return r.Stats().ActiveSessions == 1 })

	// One that keeps its carrier goes too, later.
	conn = sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), nopPacket(2))
	eventually(t, "the held streamless session is reclaimed", func() bool { return r.Stats().SessionsReclaimed == 2 })
	conn.Close()

	pconn.dialCarrier(t, wsURL)
	echoRoundTrip(t, client, testPayload(10000), nil)
	if st := r.Stats(); st.Sessions != 3 || st.SessionsReclaimed != 2 {
		t.Errorf("sessions %d, reclaimed %d; want 3, 2 (the honest session kept)", st.Sessions, st.SessionsReclaimed)
	}
}

func TestNewSessionBudgetPerAddress(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", NewSessionRate: 0.001, NewSessionBurst: 2})
	var held []net.Conn
	for i := range 2 {
		held = append(held, sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), nopPacket(uint32(i))))
	}
	eventually(t, "two sessions start", func() bool { return r.Stats().Sessions == 2 })
	waitEOF(t, sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), nopPacket(3)))
	if got := r.Stats().SessionsRefused[refuseAddr]; got != 1 {
		t.Errorf("addr_budget refusals %d, want 1", got)
	}
	// Another address has its own budget.
	held = append(held, sendFirst(t, wsURL, "127.0.0.2", turbotunnel.NewClientID(), nopPacket(4)))
	eventually(t, "the other address's session starts", func() bool { return r.Stats().Sessions == 3 })
	for _, c := range held {
		c.Close()
	}
}

func TestMaxSessions(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", MaxSessions: 1})
	held := sendFirst(t, wsURL, "127.0.0.1", turbotunnel.NewClientID(), nopPacket(1))
	defer held.Close()
	eventually(t, "the session starts", func() bool { return r.Stats().ActiveSessions == 1 })
	waitEOF(t, sendFirst(t, wsURL, "127.0.0.2", turbotunnel.NewClientID(), nopPacket(2)))
	if st := r.Stats(); st.SessionsRefused[refuseGlobal] != 1 || st.Sessions != 1 {
		t.Errorf("refused %v, sessions %d; want 1 global_cap, 1 session", st.SessionsRefused, st.Sessions)
	}
}

func TestMaxCarriersPerAddrAtListener(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", MaxCarriersPerAddr: 2})
	var held []*websocket.Conn
	for range 2 {
		ws, _, err := dialFrom(wsURL, "127.0.0.1", nil)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ws)
	}
	if _, _, err := dialFrom(wsURL, "127.0.0.1", nil); err == nil {
		t.Fatal("third connection from one address accepted")
	}
	// Headers from an untrusted peer change nothing.
	if _, _, err := dialFrom(wsURL, "127.0.0.1", http.Header{"X-Forwarded-For": {"198.51.100.9"}}); err == nil {
		t.Fatal("untrusted X-Forwarded-For escaped the limit")
	}
	ws, _, err := dialFrom(wsURL, "127.0.0.2", nil)
	if err != nil {
		t.Fatalf("another address refused: %v", err)
	}
	held = append(held, ws)
	if got := r.Stats().RejectedAddr; got != 2 {
		t.Errorf("RejectedAddr = %d, want 2", got)
	}
	// Requests that open no carrier give their place back.
	for range 3 {
		c, err := net.DialTCP("tcp", &net.TCPAddr{IP: net.ParseIP("127.0.0.3")}, &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: wsPort(t, wsURL)})
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: relay\r\n\r\n")
		waitEOF(t, c)
	}
	for range 2 {
		ws, _, err := dialFrom(wsURL, "127.0.0.3", nil)
		if err != nil {
			t.Fatalf("after requests that were answered: %v", err)
		}
		held = append(held, ws)
	}
	// A closed carrier frees its place.
	held[0].Close()
	eventually(t, "a closed carrier frees its place", func() bool {
		ws, _, err := dialFrom(wsURL, "127.0.0.1", nil)
		if err == nil {
			held = append(held, ws)
		}
		return err == nil
	})
	for _, ws := range held {
		ws.Close()
	}
}

// wsPort returns the port of wsURL.
func wsPort(tb testing.TB, wsURL string) int {
	tb.Helper()
	u, err := url.Parse(wsURL)
	if err != nil {
		tb.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		tb.Fatal(err)
	}
	return port
}

// TestTrustedProxyForwardedAddress mounts the handler behind a server whose
// peers (127.0.0.1) are trusted: limits key on the forwarded address, and
// the handler answers 503 beyond them.
func TestTrustedProxyForwardedAddress(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		cfg := Config{ForwardAddr: "127.0.0.1:1", MaxCarriersPerAddr: 1}
		if trusted {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(r.Handler())
		wsURL := "ws" + strings.TrimPrefix(srv.URL, "http") + "/"
		from := func(addr string) http.Header { return http.Header{"X-Forwarded-For": {addr}} }
		a, _, err := dialFrom(wsURL, "127.0.0.1", from("198.51.100.1"))
		if err != nil {
			t.Fatal(err)
		}
		_, status, err := dialFrom(wsURL, "127.0.0.1", from("198.51.100.1"))
		if err == nil || status != http.StatusServiceUnavailable {
			t.Errorf("trusted=%v: second carrier of one forwarded address: %d, %v; want 503", trusted, status, err)
		}
		b, status, err := dialFrom(wsURL, "127.0.0.1", from("198.51.100.2"))
		if trusted && err != nil {
			t.Errorf("trusted: another forwarded address refused: %d, %v", status, err)
		}
		if !trusted && (err == nil || status != http.StatusServiceUnavailable) {
			t.Errorf("untrusted: forwarded address believed (%d, %v)", status, err)
		}
		if b != nil {
			b.Close()
		}
		a.Close()
		srv.Close()
		r.Close()
	}
}

func TestCarrierIdleTimeout(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", CarrierIdleTimeout: 200 * time.Millisecond})
	ws, _, err := dialFrom(wsURL, "127.0.0.1", nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := wsconn.New(ws)
	id := turbotunnel.NewClientID()
	if _, err := conn.Write(append(append([]byte(nil), turbotunnel.Token[:]...), id[:]...)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the carrier is up", func() bool { return r.Stats().ActiveConnections == 1 })
	waitEOF(t, conn)
	eventually(t, "the idle carrier is gone", func() bool { return r.Stats().ActiveConnections == 0 })
	if st := r.Stats(); st.Connections != 1 {
		t.Errorf("connections %d, want 1", st.Connections)
	}
}

// TestFloodWithHonestDownload floods the relay from 127.0.0.2 with
// one-packet carriers (valid first packets and junk) while an honest client
// on 127.0.0.1 downloads; the download must arrive intact, the flood must
// be held to its budget, and its sessions must be reclaimed.
func TestFloodWithHonestDownload(t *testing.T) {
	const (
		floodConns  = 600
		concurrency = 16
		size        = 2 << 20
	)
	src := sourceServer(t, size, 42)
	r, wsURL := startRelay(t, Config{
		ForwardAddr: src, NewSessionRate: 2, NewSessionBurst: 20,
		SessionOpenTimeout: 2 * time.Second,
	})

	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)

	var wg sync.WaitGroup
	stop := make(chan struct{})
	jobs := make(chan int)
	for range concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				pkt := nopPacket(uint32(i))
				if i%2 == 1 {
					pkt = make([]byte, 24)
				}
				c, err := trySendFirst(wsURL, "127.0.0.2", turbotunnel.NewClientID(), pkt)
				if err != nil {
					t.Errorf("flood connection %d: %v", i, err)
					continue
				}
				c.Close()
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := range floodConns {
			select {
			case jobs <- i:
			case <-stop:
				return
			}
		}
	}()

	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	n, err := io.Copy(h, stream)
	stream.Close()
	if err != nil || n != size {
		t.Fatalf("honest download: %d bytes, %v; want %d", n, err, size)
	}
	if got, want := h.Sum(nil), sourceDigest(size, 42); !bytes.Equal(got, want) {
		t.Fatal("honest download corrupted")
	}
	close(stop)
	wg.Wait()

	st := r.Stats()
	t.Logf("flood: %d sessions started, refused %v, reclaimed %d", st.Sessions-1, st.SessionsRefused, st.SessionsReclaimed)
	if st.SessionsRefused[refuseMalformed] == 0 {
		t.Error("no junk first packet refused")
	}
	eventually(t, "the flood's sessions are reclaimed", func() bool { return r.Stats().ActiveSessions == 1 })
	if st := r.Stats(); st.SessionsReclaimed != uint64(st.Sessions-1) {
		t.Errorf("%d flood sessions, %d reclaimed", st.Sessions-1, st.SessionsReclaimed)
	}
}

// sourceServer serves size pseudo-random bytes (seeded) to every
// connection, then closes it.
func sourceServer(tb testing.TB, size int, seed uint64) string {
	tb.Helper()
	return loopback.Accept(tb, func(c net.Conn) { c.Write(sourceBytes(size, seed)) })
}

func sourceBytes(size int, seed uint64) []byte {
	b := make([]byte, size)
	rng := rand.NewChaCha8([32]byte{byte(seed)})
	rng.Read(b)
	return b
}

func sourceDigest(size int, seed uint64) []byte {
	d := sha256.Sum256(sourceBytes(size, seed))
	return d[:]
}

func TestPeerKey(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.7":            "192.0.2.7",
		"::ffff:192.0.2.7":     "192.0.2.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::",
		"2001:db8:1:3::1":      "2001:db8:1:3::",
		"fe80::1":              "fe80::",
	} {
		if got := peerKey(netip.MustParseAddr(in)); got != netip.MustParseAddr(want) {
			t.Errorf("peerKey(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestAdmissionForgetsIdleBudgets: a budget is dropped once its carriers
// are gone and its bucket is full again, so the table does not grow with
// every address ever seen.
func TestAdmissionForgetsIdleBudgets(t *testing.T) {
	a := newAdmission(Config{MaxCarriersPerAddr: 2, NewSessionRate: 1, NewSessionBurst: 1})
	one, two := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	first, second, third := a.addCarrier(one), a.addCarrier(one), a.addCarrier(one)
	if !first || !second || third {
		t.Fatal("carrier cap of 2 not applied")
	}
	if allowed, again := a.allowSession(two), a.allowSession(two); !allowed || again {
		t.Fatal("session burst of 1 not applied")
	}
	a.removeCarrier(one)
	a.removeCarrier(one)
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.peers[one]; ok {
		t.Error("budget without carriers and with a full bucket kept")
	}
	a.sweep(a.now() + int64(time.Minute))
	if len(a.peers) != 0 {
		t.Errorf("%d budgets left after the sweep, want 0", len(a.peers))
	}
}
