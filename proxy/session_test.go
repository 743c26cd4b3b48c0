package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/messages"
)

// waitFor fails the test if ch yields nothing within a generous bound; the
// bound only turns a hang into a failure, it asserts nothing about speed.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// testClient plays a Snowflake client: a pion offerer on loopback.
type testClient struct {
	pc     *webrtc.PeerConnection
	opened chan datachannel.ReadWriteCloser
	offer  string // serialized session description
}

func newTestClient(t testing.TB) *testClient {
	t.Helper()
	var se webrtc.SettingEngine
	se.DetachDataChannels()
	webrtcnet.LoopbackOnly(&se, nil)
	api := webrtc.NewAPI(webrtc.WithSettingEngine(se))
	pc, err := api.NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	c := &testClient{pc: pc, opened: make(chan datachannel.ReadWriteCloser, 1)}
	t.Cleanup(func() { pc.GracefulClose() })
	ordered := true
	dc, err := pc.CreateDataChannel("snowflake-0123456789abcdef", &webrtc.DataChannelInit{Ordered: &ordered})
	if err != nil {
		t.Fatal(err)
	}
	dc.OnOpen(func() {
		rwc, err := dc.Detach()
		if err != nil {
			t.Errorf("client detach: %v", err)
			return
		}
		c.opened <- rwc
	})
	local, err := webrtcnet.LocalDescription(context.Background(), pc, webrtc.SDPTypeOffer, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	c.offer, err = messages.SessionDescription{Type: "offer", SDP: local.SDP}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (c *testClient) setAnswer(t testing.TB, answer string) {
	t.Helper()
	desc, err := messages.DecodeSessionDescription(answer)
	if err != nil || desc.Type != "answer" {
		t.Fatalf("proxy answer %q: %v", answer, err)
	}
	if err := c.pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: desc.SDP}); err != nil {
		t.Fatal(err)
	}
}

// testRelay is a WebSocket server playing the relay.
type testRelay struct {
	srv   *httptest.Server
	conns chan relayConn
}

type relayConn struct {
	ws    *websocket.Conn
	query url.Values
}

func newTestRelay(t testing.TB) *testRelay {
	r := &testRelay{conns: make(chan relayConn, 10)}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ws, err := up.Upgrade(w, req, nil)
		if err != nil {
			return
		}
		r.conns <- relayConn{ws: ws, query: req.URL.Query()}
	}))
	return r
}

func (r *testRelay) url() string { return "ws" + strings.TrimPrefix(r.srv.URL, "http") + "/snowflake" }

// e2e wires a proxy to a test broker and relay on loopback.
type e2e struct {
	broker  *testBroker
	bsrv    *httptest.Server
	relay   *testRelay
	proxy   *Proxy
	offers  chan messages.ProxyPollResponse
	matched chan int // index of each poll answered with a match
	answers chan messages.ProxyAnswerRequest
	stop    func()
}

// pollAfter waits for a poll later than the n-th.
func (e *e2e) pollAfter(t testing.TB, n int) {
	t.Helper()
	for {
		if p := waitFor(t, e.broker.pollSeen, "a poll"); p.n > n {
			return
		}
	}
}

func startE2E(t testing.TB, mod func(*Config)) *e2e {
	t.Helper()
	e := &e2e{
		broker:  newTestBroker(t),
		relay:   newTestRelay(t),
		offers:  make(chan messages.ProxyPollResponse, 10),
		matched: make(chan int, 10),
		answers: make(chan messages.ProxyAnswerRequest, 10),
	}
	e.broker.reply = func(n int, _ messages.ProxyPollRequest) (int, []byte) {
		select {
		case r := <-e.offers:
			e.matched <- n
			return http.StatusOK, encodePollResponse(t, r)
		default:
			return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20})
		}
	}
	e.broker.onAnswer = func(req messages.ProxyAnswerRequest) string {
		e.answers <- req
		return messages.StatusSuccess
	}
	e.bsrv = httptest.NewServer(e.broker)
	cfg := Config{
		BrokerURL:           e.bsrv.URL + "/",
		AllowedRelayPattern: "127.0.0.1:*$",
		AllowNonTLSRelay:    true,
		AllowPrivateRelay:   true,
		LoopbackOnly:        true,
		Capacity:            1,
		MinPollInterval:     time.Millisecond,
		SummaryInterval:     -1,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.proxy = p
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			e.bsrv.Close()
			e.relay.srv.Close()
		})
	}
	t.Cleanup(e.stop)
	return e
}

// connect runs one client through the broker and proxy to the relay.
func (e *e2e) connect(t testing.TB, relayURL string) (*testClient, datachannel.ReadWriteCloser, relayConn) {
	t.Helper()
	c := newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NAT: "unknown", NextPoll: 20, RelayURL: relayURL}
	ans := waitFor(t, e.answers, "the proxy's answer")
	c.setAnswer(t, ans.Answer)
	rwc := waitFor(t, c.opened, "the data channel")
	rc := waitFor(t, e.relay.conns, "the relay connection")
	return c, rwc, rc
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	rand.Read(b)
	return b
}

// exchange sends data both ways and checks it arrives intact.
func exchange(t *testing.T, rwc datachannel.ReadWriteCloser, ws *websocket.Conn) {
	t.Helper()
	// Upstream: token, ClientID, then packets, as a Snowflake client sends
	// them, plus messages larger than the proxy's copy buffer.
	up := [][]byte{
		{0x12, 0x93, 0x60, 0x5d, 0x27, 0x81, 0x75, 0xf5},
		randomBytes(8),
	}
	for i := range 200 {
		up = append(up, randomBytes(1+i*7%1400))
	}
	up = append(up, randomBytes(3000), randomBytes(60000), randomBytes(10))
	var wantUp []byte
	for _, m := range up {
		wantUp = append(wantUp, m...)
	}
	// Downstream: WebSocket messages of many sizes, some far above the
	// copy buffer and above the DataChannel high-water mark in total.
	var down [][]byte
	for _, n := range []int{1, 1400, 2047, 2048, 2049, 5000, 100000, 700000, 3} {
		down = append(down, randomBytes(n))
	}
	var wantDown []byte
	for _, m := range down {
		wantDown = append(wantDown, m...)
	}

	errc := make(chan error, 4)
	go func() {
		for _, m := range up {
			if _, err := rwc.Write(m); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	gotUp := make(chan []byte, 1)
	go func() {
		var got []byte
		for len(got) < len(wantUp) {
			_, m, err := ws.ReadMessage()
			if err != nil {
				errc <- err
				break
			}
			got = append(got, m...)
		}
		gotUp <- got
	}()
	go func() {
		for _, m := range down {
			if err := ws.WriteMessage(websocket.BinaryMessage, m); err != nil {
				errc <- err
				return
			}
		}
		errc <- nil
	}()
	gotDown := make(chan []byte, 1)
	go func() {
		var got []byte
		buf := make([]byte, 65536)
		for len(got) < len(wantDown) {
			n, err := rwc.Read(buf)
			if err != nil {
				errc <- err
				break
			}
			got = append(got, buf[:n]...)
		}
		gotDown <- got
	}()
	if g := waitFor(t, gotUp, "upstream bytes"); !bytes.Equal(g, wantUp) {
		t.Errorf("relay got %d bytes, want %d (intact: %v)", len(g), len(wantUp), bytes.Equal(g, wantUp))
	}
	if g := waitFor(t, gotDown, "downstream bytes"); !bytes.Equal(g, wantDown) {
		t.Errorf("client got %d bytes, want %d", len(g), len(wantDown))
	}
	for range 2 {
		if err := waitFor(t, errc, "writers"); err != nil {
			t.Errorf("writer: %v", err)
		}
	}
}

func TestWebRTCSessionClientCloses(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	e := startE2E(t, nil)
	c, rwc, rc := e.connect(t, e.relay.url())
	if rc.query.Has("client_ip") {
		t.Errorf("client_ip %q sent for a loopback-only client", rc.query.Get("client_ip"))
	}
	exchange(t, rwc, rc.ws)
	if s := e.proxy.Stats(); s.Relaying != 1 || s.Connections != 1 || s.Clients != 1 {
		t.Errorf("Stats during the session = %+v", s)
	}
	matched := waitFor(t, e.matched, "the match")
	if n := len(e.broker.recorded()); n != matched+1 {
		t.Errorf("%d polls while at capacity 1, want %d", n, matched+1)
	}
	// The client goes away: the proxy must close the relay side and free
	// its slot, which lets it poll again.
	c.pc.Close()
	if _, _, err := rc.ws.ReadMessage(); err == nil {
		t.Error("relay connection still open after the client left")
	}
	e.pollAfter(t, matched)
	rc.ws.Close()
	e.stop()
	s := e.proxy.Stats()
	if s.Clients != 0 || s.Relaying != 0 || s.Failures != 0 || s.BytesFromClient == 0 || s.BytesToClient == 0 {
		t.Errorf("Stats after stop = %+v", s)
	}
}

func TestWebRTCSessionRelayCloses(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	// The relay is the default relay: checked before the first poll, and
	// used when the broker names none.
	relay := newTestRelay(t)
	e := startE2E(t, func(c *Config) { c.RelayURL = relay.url() })
	e.relay.srv.Close()
	e.relay = relay
	check := waitFor(t, relay.conns, "the default relay check")
	if _, _, err := check.ws.ReadMessage(); err == nil {
		t.Error("reachability check sent a message")
	}
	check.ws.Close()

	_, rwc, rc := e.connect(t, "")
	exchange(t, rwc, rc.ws)
	rc.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	rc.ws.Close()
	buf := make([]byte, 100)
	for {
		if _, err := rwc.Read(buf); err != nil {
			break // the proxy closed the data channel
		}
	}
	e.pollAfter(t, waitFor(t, e.matched, "the match"))
	e.stop()
	if s := e.proxy.Stats(); s.Clients != 0 || s.Relaying != 0 || s.Connections != 1 {
		t.Errorf("Stats after stop = %+v", s)
	}
}

// TestSessionFailuresReleaseSlot: every way a match can fail frees the
// client slot (capacity 1, so the next poll proves it) and is counted.
func TestSessionFailuresReleaseSlot(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tests := []struct {
		name     string
		relayURL string
		offer    func(c *testClient) string
		answer   string // broker answer status
		reason   string
	}{
		{name: "relay outside pattern", relayURL: "ws://relay.example/", reason: FailOffer},
		{name: "offer is an answer", offer: func(c *testClient) string {
			return strings.Replace(c.offer, `"type":"offer"`, `"type":"answer"`, 1)
		}, reason: FailOffer},
		{name: "client gone", answer: messages.StatusClientGone, reason: FailAnswer},
		{name: "no data channel", reason: FailDataChannel},
		{name: "relay unreachable", relayURL: "ws://127.0.0.1:1/", reason: FailRelay},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := startE2E(t, func(c *Config) { c.DataChannelTimeout = 3 * time.Second })
			status := messages.StatusSuccess
			if tt.answer != "" {
				status = tt.answer
			}
			c := newTestClient(t)
			e.broker.onAnswer = func(req messages.ProxyAnswerRequest) string {
				if tt.reason != FailDataChannel && tt.reason != FailAnswer {
					c.setAnswer(t, req.Answer)
				}
				return status
			}
			offer := c.offer
			if tt.offer != nil {
				offer = tt.offer(c)
			}
			relayURL := tt.relayURL
			if relayURL == "" {
				relayURL = e.relay.url()
			}
			e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: offer, NextPoll: 20, RelayURL: relayURL}
			e.pollAfter(t, waitFor(t, e.matched, "the match"))
			e.stop()
			s := e.proxy.Stats()
			if s.Clients != 0 || s.Connections != 0 || s.Failures != 1 {
				t.Errorf("Stats = %+v, want one failure and no slot held", s)
			}
			rec := httptest.NewRecorder()
			e.proxy.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
			if want := `flurry_proxy_connection_failures_total{reason="` + tt.reason + `"} 1`; !strings.Contains(rec.Body.String(), want) {
				t.Errorf("metrics lack %s:\n%s", want, rec.Body.String())
			}
		})
	}
}

// TestRelayClientIP: the client's public address from its SDP reaches the
// relay as client_ip, existing query parameters kept.
func TestRelayClientIP(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	relay := newTestRelay(t)
	defer relay.srv.Close()
	s, err := Config{BrokerURL: "http://b.example/", AllowedRelayPattern: "127.0.0.1:*$",
		AllowNonTLSRelay: true, AllowPrivateRelay: true}.settle()
	if err != nil {
		t.Fatal(err)
	}
	d := newRelayDialer(s)
	for _, ip := range []string{"203.0.113.5", "2001:db8::5"} {
		ws, err := d.dial(context.Background(), relay.url()+"?x=1", netip.MustParseAddr(ip))
		if err != nil {
			t.Fatal(err)
		}
		rc := <-relay.conns
		if got := rc.query.Get("client_ip"); got != ip || rc.query.Get("x") != "1" {
			t.Errorf("relay query %v, want client_ip=%s and x=1", rc.query, ip)
		}
		ws.Close()
		rc.ws.Close()
	}
	_, err = d.dial(context.Background(), "ws://relay.other/", noClientIP)
	if !errors.Is(err, ErrRelayHostname) {
		t.Errorf("dial outside the pattern = %v", err)
	}
	io.Discard.Write(nil)
}
