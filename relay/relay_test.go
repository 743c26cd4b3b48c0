package relay

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/leak"
	"github.com/flurrypt/flurry/internal/testkit/wsconn"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// testPayload returns n pseudo-random bytes.
func testPayload(n int) []byte {
	b := make([]byte, n)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// echoRoundTrip sends payload through a new stream of client and checks
// that exactly the same bytes come back. at, if not nil, is called once
// when half of the payload has come back.
func echoRoundTrip(t *testing.T, client *testClient, payload []byte, at func()) {
	t.Helper()
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	werr := make(chan error, 1)
	go func() {
		for off := 0; off < len(payload); {
			end := min(off+32<<10, len(payload))
			if _, err := stream.Write(payload[off:end]); err != nil {
				werr <- err
				return
			}
			off = end
		}
		werr <- stream.CloseWrite()
	}()
	got := make([]byte, 0, len(payload))
	buf := make([]byte, 64<<10)
	for len(got) < len(payload) {
		n, err := stream.Read(buf)
		got = append(got, buf[:n]...)
		if at != nil && len(got) >= len(payload)/2 {
			at()
			at = nil
		}
		if err != nil {
			t.Fatalf("read after %d bytes: %v", len(got), err)
		}
	}
	if err := <-werr; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, payload) {
		i := 0
		for i < len(got) && got[i] == payload[i] {
			i++
		}
		t.Fatalf("echo differs from byte %d", i)
	}
	// The echo server passes the half-close back: the stream ends cleanly.
	if n, err := stream.Read(buf); n != 0 || err != io.EOF {
		t.Fatalf("after the echo: Read = %d, %v; want 0, EOF", n, err)
	}
}

func TestEchoRoundTrip(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t), NumTurbotunnel: 2})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	echoRoundTrip(t, client, testPayload(10<<20), nil)

	st := r.Stats()
	if st.Sessions != 1 || st.Connections != 1 || st.Streams != 1 {
		t.Errorf("stats: %d sessions, %d connections, %d streams; want 1 each", st.Sessions, st.Connections, st.Streams)
	}
	if st.StreamBytesUp != 10<<20 || st.StreamBytesDown != 10<<20 {
		t.Errorf("stream bytes up %d down %d, want %d each", st.StreamBytesUp, st.StreamBytesDown, 10<<20)
	}
}

func TestSessionSurvivesCarrier(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t), NumTurbotunnel: 2})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	first := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	var second *testCarrier
	echoRoundTrip(t, client, testPayload(10<<20), func() {
		// The proxy dies mid-transfer; the client finds another one,
		// which opens a new WebSocket with the same ClientID.
		first.kill()
		<-first.done
		second = pconn.dialCarrier(t, wsURL)
	})
	if second.packets.Load() == 0 {
		t.Error("the second carrier carried no packets")
	}
	if st := r.Stats(); st.Sessions != 1 || st.Connections != 2 {
		t.Errorf("stats: %d sessions, %d connections; want 1 and 2", st.Sessions, st.Connections)
	}
}

func TestSeveralCarriersOneSession(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t)})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	a := pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	// The session starts on the first carrier (a carrier whose first
	// packet neither opens a session nor joins one is refused, see
	// admission.go); then both carry it.
	echoRoundTrip(t, client, testPayload(1<<10), nil)
	b := pconn.dialCarrier(t, wsURL)
	echoRoundTrip(t, client, testPayload(2<<20), nil)
	for name, c := range map[string]*testCarrier{"first": a, "second": b} {
		if c.packets.Load() == 0 || c.sent.Load() == 0 {
			t.Errorf("%s carrier: %d packets received, %d sent; want both > 0", name, c.packets.Load(), c.sent.Load())
		}
	}
	st := r.Stats()
	if st.Sessions != 1 || st.ActiveSessions != 1 || st.ActiveConnections != 2 {
		t.Errorf("stats: %d sessions (%d live), %d live connections; want 1 (1), 2",
			st.Sessions, st.ActiveSessions, st.ActiveConnections)
	}
}

func TestSeveralClients(t *testing.T) {
	_, wsURL := startRelay(t, Config{ForwardAddr: echoServer(t), NumTurbotunnel: 3})
	done := make(chan struct{})
	for i := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			pconn := newTestPacketConn(turbotunnel.NewClientID())
			pconn.dialCarrier(t, wsURL)
			client := newTestClient(t, pconn)
			echoRoundTrip(t, client, testPayload(256<<10+i), nil)
		}()
	}
	for range 4 {
		<-done
	}
}

// waitClosed reads from a carrier until the relay closes it.
func waitClosed(t *testing.T, wsURL string, send []byte) {
	t.Helper()
	ws, err := dialWS(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	conn := wsconn.New(ws)
	defer conn.Close()
	if len(send) > 0 {
		if _, err := conn.Write(send); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := io.Copy(io.Discard, conn); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Logf("carrier ended with %v", err)
	}
}

func TestHandshakeFailures(t *testing.T) {
	token := turbotunnel.Token[:]
	tests := []struct {
		name   string
		send   []byte
		reason string
	}{
		{"bad token", []byte("GET / HTTP/1.1\r\n"), failBadToken},
		{"short bad token", []byte{0x12, 0x93, 0x00}, failBadToken},
		{"eof", nil, failEOF},
		{"timeout before ClientID", token, failTimeout},
		{"timeout inside token", token[:3], failTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", TokenTimeout: time.Second})
			if tt.reason == failEOF {
				// A clean close before any data, e.g. a proxy's probe:
				// send the close frame, then wait for the relay to
				// close its end.
				ws, err := dialWS(wsURL)
				if err != nil {
					t.Fatal(err)
				}
				msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
				if err := ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, ws.UnderlyingConn())
				ws.Close()
			} else {
				waitClosed(t, wsURL, tt.send)
			}
			// The relay counts the failure before it closes the carrier.
			if got := r.Stats().HandshakeFailures; got[tt.reason] != 1 {
				t.Fatalf("handshake failures: %v; want 1 %q", got, tt.reason)
			}
			if st := r.Stats(); st.Connections != 0 {
				t.Errorf("%d connections counted, want 0", st.Connections)
			}
		})
	}
}

func TestNotWebSocket(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", Path: "/ws"})
	httpURL := "http" + strings.TrimPrefix(wsURL, "ws")
	base := strings.Split(httpURL, "/?")[0]
	for _, tt := range []struct {
		url  string
		code int
	}{
		{base + "/ws", http.StatusBadRequest},
		{base + "/other", http.StatusNotFound},
	} {
		resp, err := http.Get(tt.url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("GET %s: %d, want %d", tt.url, resp.StatusCode, tt.code)
		}
	}
	st := r.Stats()
	if st.RejectedPath != 1 || st.HandshakeFailures[failUpgrade] != 1 {
		t.Errorf("rejected path %d, upgrade failures %d; want 1, 1", st.RejectedPath, st.HandshakeFailures[failUpgrade])
	}
	if _, err := dialWS(strings.Replace(wsURL, "/?", "/other?", 1)); err == nil {
		t.Error("WebSocket on another path accepted")
	}
}

func TestConnectionLimit(t *testing.T) {
	r, wsURL := startRelay(t, Config{ForwardAddr: "127.0.0.1:1", MaxConns: 1})
	ws, err := dialWS(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if _, err := dialWS(wsURL); err == nil {
		t.Fatal("second connection accepted beyond MaxConns")
	}
	if got := r.Stats().RejectedLimit; got != 1 {
		t.Errorf("RejectedLimit = %d, want 1", got)
	}
}

func TestDialFailure(t *testing.T) {
	// Nothing listens on the target: the stream is closed and counted, the
	// relay carries on.
	r, wsURL := startRelay(t, Config{ForwardAddr: closedPort(t)})
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	stream.Write([]byte("hello"))
	if _, err := io.ReadAll(stream); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		t.Logf("stream ended: %v", err)
	}
	if got := r.Stats().DialFailures; got != 1 {
		t.Errorf("DialFailures = %d, want 1", got)
	}
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func TestSessionWithoutClientAddr(t *testing.T) {
	// Snowflake panicked when the ClientID-to-IP map had forgotten a
	// client (weakness 20). Here the address is simply unknown.
	r, err := New(Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := &session{id: turbotunnel.NewClientID()}
	addr, ok := r.startSession(s)
	if !ok || addr.IsValid() {
		t.Fatalf("startSession = %v, %v; want the zero address and true", addr, ok)
	}
	r.endSession(s)
	if len(r.clients) != 0 {
		t.Errorf("%d clients left", len(r.clients))
	}
}

func TestParseClientIP(t *testing.T) {
	tests := []struct{ in, want string }{
		{"1.2.3.4", "1.2.3.4"},
		{"2001:db8::1", "2001:db8::1"},
		{"::ffff:1.2.3.4", "1.2.3.4"},
		{"", ""},
		{"abc", ""},
		{"1.2.3.4.5", ""},
		{"[12::34]", ""},
		{"1.2.3.4:80", ""},
		{"0.0.0.0", ""},
		{"::", ""},
		{"fe80::1%eth0", ""},
	}
	for _, tt := range tests {
		got := parseClientIP(tt.in)
		s := ""
		if got.IsValid() {
			s = got.String()
		}
		if s != tt.want {
			t.Errorf("parseClientIP(%q) = %q, want %q", tt.in, s, tt.want)
		}
	}
}

func TestShardAssignmentIsKeyed(t *testing.T) {
	// Two relays (two keys) assign the same ClientIDs differently, and
	// each spreads them over all its shards.
	var relays [2]*Relay
	for i := range relays {
		r, err := New(Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 4})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		relays[i] = r
	}
	differ := 0
	used := map[*shard]bool{}
	for i := range 200 {
		var id turbotunnel.ClientID
		id[0] = byte(i) // ClientIDs a client could pick to crowd one shard
		a, b := relays[0].shardFor(id), relays[1].shardFor(id)
		used[a] = true
		if indexOf(relays[0].shards, a) != indexOf(relays[1].shards, b) {
			differ++
		}
	}
	if len(used) != 4 {
		t.Errorf("ClientIDs used %d of 4 shards", len(used))
	}
	if differ < 100 {
		t.Errorf("only %d of 200 ClientIDs assigned differently by two keys", differ)
	}
}

func indexOf(s []*shard, x *shard) int {
	for i, y := range s {
		if y == x {
			return i
		}
	}
	return -1
}

func TestConfigValidation(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want error
	}{
		{"no target", Config{}, ErrNoTarget},
		{"negative shards", Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: -1}, ErrInvalidConfig},
		{"bad path", Config{ForwardAddr: "127.0.0.1:1", Path: "ws"}, ErrInvalidConfig},
		{"negative timeout", Config{ForwardAddr: "127.0.0.1:1", HandshakeTimeout: -time.Second}, ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); !errors.Is(err, tt.want) {
				t.Fatalf("New = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestSourcePrefix(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"192.0.2.1", "192.0.2.1/32"},
		{"192.0.2.0/24", "192.0.2.0/24"},
		{"192.0.2.77/24", "192.0.2.0/24"},
		{"2001:db8::/64", "2001:db8::/64"},
	} {
		p, err := ParseSourcePrefix(tt.in)
		if err != nil || p.String() != tt.want {
			t.Errorf("ParseSourcePrefix(%q) = %v, %v; want %s", tt.in, p, err, tt.want)
		}
		for range 100 {
			if a := randomAddr(p); !p.Contains(a) {
				t.Fatalf("randomAddr(%v) = %v, outside", p, a)
			}
		}
	}
	if _, err := ParseSourcePrefix("example.com"); err == nil {
		t.Error("ParseSourcePrefix accepted a host name")
	}
	// A /30 yields more than one address.
	p := netip.MustParsePrefix("10.0.0.0/30")
	seen := map[netip.Addr]bool{}
	for range 200 {
		seen[randomAddr(p)] = true
	}
	if len(seen) != 4 {
		t.Errorf("randomAddr over %v produced %d distinct addresses, want 4", p, len(seen))
	}
}

func TestMetricsHandler(t *testing.T) {
	r, err := New(Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rec := httptest.NewRecorder()
	r.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	body := rec.Body.String()
	for _, name := range []string{
		"flurry_relay_connections_total", "flurry_relay_sessions", "flurry_relay_queue_drops_total",
		`flurry_relay_handshake_failures_total{reason="bad_token"}`, `flurry_relay_stream_bytes_total{direction="upstream"}`,
		"go_goroutines",
	} {
		if !strings.Contains(body, name) {
			t.Errorf("metrics lack %s", name)
		}
	}
}
