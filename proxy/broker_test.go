package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/flurrypt/flurry/messages"
)

// recordedPoll is one poll the test broker received.
type recordedPoll struct {
	n   int // index, from 0
	req messages.ProxyPollRequest
	raw []byte
	at  time.Time
}

// testBroker is an in-process broker whose replies the test chooses.
type testBroker struct {
	t testing.TB

	mu    sync.Mutex
	polls []recordedPoll
	// reply returns the HTTP status and body for the n-th poll (from 0).
	reply func(n int, req messages.ProxyPollRequest) (int, []byte)
	// onAnswer handles an answer and returns the status to send back;
	// nil means "success".
	onAnswer func(req messages.ProxyAnswerRequest) string

	pollSeen chan recordedPoll // every poll, if the test listens
}

func newTestBroker(t testing.TB) *testBroker {
	b := &testBroker{t: t, pollSeen: make(chan recordedPoll, 1000)}
	b.reply = func(int, messages.ProxyPollRequest) (int, []byte) {
		return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20000})
	}
	return b
}

func encodePollResponse(t testing.TB, r messages.ProxyPollResponse) []byte {
	t.Helper()
	b, err := r.Encode()
	if err != nil {
		t.Fatalf("encode poll response: %v", err)
	}
	return b
}

func (b *testBroker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, messages.MaxBodySize+1))
	if err != nil {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	switch r.URL.Path {
	case "/proxy":
		req, err := messages.DecodeProxyPollRequest(body)
		if err != nil {
			b.t.Errorf("broker: bad poll %q: %v", body, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		n := len(b.polls)
		rec := recordedPoll{n: n, req: req, raw: body, at: time.Now()}
		b.polls = append(b.polls, rec)
		reply := b.reply
		b.mu.Unlock()
		select {
		case b.pollSeen <- rec:
		default:
		}
		status, out := reply(n, req)
		w.WriteHeader(status)
		w.Write(out)
	case "/answer":
		req, err := messages.DecodeProxyAnswerRequest(body)
		if err != nil || !bytes.Contains(body, []byte("a=candidate")) {
			b.t.Errorf("broker: bad answer %q: %v", body, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		b.mu.Lock()
		on := b.onAnswer
		b.mu.Unlock()
		status := messages.StatusSuccess
		if on != nil {
			status = on(req)
		}
		out, _ := messages.ProxyAnswerResponse{Status: status}.Encode()
		w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

func (b *testBroker) recorded() []recordedPoll {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]recordedPoll(nil), b.polls...)
}

// handlerTransport is an http.RoundTripper that calls a handler in the
// calling goroutine: no sockets, so it works inside a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	rec := httptest.NewRecorder()
	t.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

// startSynctestProxy runs a proxy against b inside the current bubble
// and returns a function that stops it and waits.
func startSynctestProxy(t *testing.T, b *testBroker, mod func(*Config)) (*Proxy, func()) {
	t.Helper()
	cfg := Config{
		BrokerURL:           "https://broker.example/",
		AllowedRelayPattern: "snowflake.example$",
		HTTPClient:          &http.Client{Transport: handlerTransport{b}},
		SummaryInterval:     -1,
		LoopbackOnly:        true,
	}
	if mod != nil {
		mod(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	return p, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
}

func TestPollFieldsAndNextPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBroker(t)
		start := time.Now()
		_, stop := startSynctestProxy(t, b, nil)
		time.Sleep(61 * time.Second)
		stop()

		polls := b.recorded()
		if len(polls) != 4 {
			t.Fatalf("got %d polls in 61 s with NextPoll 20 s, want 4", len(polls))
		}
		sids := map[string]bool{}
		for i, p := range polls {
			if want := start.Add(time.Duration(i) * 20 * time.Second); !p.at.Equal(want) {
				t.Errorf("poll %d at %v, want %v", i, p.at.Sub(start), want.Sub(start))
			}
			r := p.req
			if r.Version != "1.3" || r.Type != "standalone" || r.NAT != "unknown" || r.Clients != 0 ||
				r.AcceptedRelayPattern == nil || *r.AcceptedRelayPattern != "snowflake.example$" || len(r.Sid) != 22 {
				t.Errorf("poll %d = %+v", i, r)
			}
			if sids[r.Sid] {
				t.Errorf("Sid %q reused", r.Sid)
			}
			sids[r.Sid] = true
			// Key order and encoding as Snowflake's proxy writes them.
			wantRaw := `{"Sid":"` + r.Sid + `","Version":"1.3","Type":"standalone","NAT":"unknown","Clients":0,"AcceptedRelayPattern":"snowflake.example$"}`
			if string(p.raw) != wantRaw {
				t.Errorf("poll body %s, want %s", p.raw, wantRaw)
			}
		}
	})
}

func TestIncorrectRelayPatternObeysNextPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBroker(t)
		b.reply = func(int, messages.ProxyPollRequest) (int, []byte) {
			// The exact bytes of Snowflake's broker
			// (vectors/snowflake-2.14.1/proxy-poll-response-incorrect-relay-pattern.json).
			return http.StatusOK, []byte(`{"Status":"incorrect relay pattern","Offer":"","NAT":"","NextPoll":3600000,"RelayURL":""}`)
		}
		_, stop := startSynctestProxy(t, b, nil)
		time.Sleep(59 * time.Minute)
		if n := len(b.recorded()); n != 1 {
			t.Errorf("%d polls within the hour after incorrect relay pattern, want 1", n)
		}
		time.Sleep(2 * time.Minute)
		if n := len(b.recorded()); n != 2 {
			t.Errorf("%d polls after 61 minutes, want 2", n)
		}
		stop()
	})
}

func TestNextPollClamped(t *testing.T) {
	tests := []struct {
		name     string
		nextPoll int64
		want     time.Duration
	}{
		{"absent uses poll interval", 0, 7 * time.Second},
		{"below minimum", 10, 2 * time.Second},
		{"above maximum", 24 * 3600 * 1000, 2 * time.Hour},
		{"in range", 30000, 30 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				b := newTestBroker(t)
				b.reply = func(int, messages.ProxyPollRequest) (int, []byte) {
					return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: tt.nextPoll})
				}
				_, stop := startSynctestProxy(t, b, func(c *Config) {
					c.PollInterval = 7 * time.Second
					c.MinPollInterval = 2 * time.Second
					c.MaxPollInterval = 2 * time.Hour
				})
				time.Sleep(3*tt.want + time.Millisecond)
				stop()
				polls := b.recorded()
				if len(polls) != 4 {
					t.Fatalf("%d polls, want 4", len(polls))
				}
				for i := 1; i < len(polls); i++ {
					if gap := polls[i].at.Sub(polls[i-1].at); gap != tt.want {
						t.Errorf("gap %d = %v, want %v", i, gap, tt.want)
					}
				}
			})
		})
	}
}

// TestBadBrokerReplies: garbage, oversize, 5xx and other bad replies make
// the proxy back off exponentially (with jitter) and keep going.
func TestBadBrokerReplies(t *testing.T) {
	bad := []struct {
		name   string
		status int
		body   []byte
	}{
		{"garbage", http.StatusOK, []byte("<html>not json</html>")},
		{"empty", http.StatusOK, nil},
		{"oversize", http.StatusOK, []byte(`{"Status":"no match","Offer":"` + strings.Repeat("A", messages.MaxBodySize) + `"}`)},
		{"500", http.StatusInternalServerError, nil},
		{"503 with body", http.StatusServiceUnavailable, []byte("busy")},
		{"410", http.StatusGone, nil},
		{"unknown status", http.StatusOK, []byte(`{"Status":"maybe","Offer":"","NAT":"","NextPoll":1,"RelayURL":""}`)},
		{"match without offer", http.StatusOK, []byte(`{"Status":"client match","Offer":"","NAT":"","NextPoll":1,"RelayURL":""}`)},
		{"match with bad offer", http.StatusOK, []byte(`{"Status":"client match","Offer":"{\"type\":1}","NAT":"","NextPoll":1,"RelayURL":""}`)},
		{"bad relay URL", http.StatusOK, []byte(`{"Status":"no match","Offer":"","NAT":"","NextPoll":1,"RelayURL":"https://x/"}`)},
		{"no status", http.StatusOK, []byte(`{"Test":"test"}`)},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const failures = 6
				b := newTestBroker(t)
				b.reply = func(n int, _ messages.ProxyPollRequest) (int, []byte) {
					if n < failures {
						return tt.status, tt.body
					}
					return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20000})
				}
				p, stop := startSynctestProxy(t, b, func(c *Config) {
					c.PollInterval = time.Second
					c.BackoffMax = 8 * time.Second
				})
				time.Sleep(time.Minute)
				stop()
				polls := b.recorded()
				if len(polls) < failures+2 {
					t.Fatalf("%d polls, want at least %d", len(polls), failures+2)
				}
				// Back-off n waits within [d/2, d], d = 1 s·2^(n-1) capped at 8 s.
				d := time.Second
				for i := 1; i <= failures; i++ {
					gap := polls[i].at.Sub(polls[i-1].at)
					if gap < d/2 || gap > d {
						t.Errorf("back-off %d = %v, want within [%v, %v]", i, gap, d/2, d)
					}
					d = min(2*d, 8*time.Second)
				}
				if gap := polls[failures+1].at.Sub(polls[failures].at); gap != 20*time.Second {
					t.Errorf("after recovery the gap is %v, want the broker's 20 s", gap)
				}
				if s := p.Stats(); s.Clients != 0 {
					t.Errorf("%d client slots held after stop, want 0", s.Clients)
				}
			})
		})
	}
}

func TestRoundClients(t *testing.T) {
	for _, tt := range []struct{ in, want int }{{0, 0}, {1, 0}, {7, 0}, {8, 8}, {15, 8}, {16, 16}, {100, 96}} {
		if got := roundClients(tt.in); got != tt.want {
			t.Errorf("roundClients(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

// TestSlotsCapacity: a full set of slots blocks the next acquire until one
// is released; release is idempotent.
func TestSlotsCapacity(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSlots(2)
		ctx := context.Background()
		a, _ := s.acquire(ctx)
		b, _ := s.acquire(ctx)
		got := make(chan *slot)
		go func() {
			c, _ := s.acquire(ctx)
			got <- c
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("third slot granted at capacity 2")
		default:
		}
		if s.count() != 2 {
			t.Errorf("count = %d, want 2", s.count())
		}
		a.release()
		a.release() // idempotent: must not free a second slot
		c := <-got
		if s.count() != 2 {
			t.Errorf("count = %d after release and re-acquire, want 2", s.count())
		}
		ctx2, cancel := context.WithCancel(ctx)
		errc := make(chan error)
		go func() {
			_, err := s.acquire(ctx2)
			errc <- err
		}()
		synctest.Wait()
		cancel()
		if err := <-errc; err == nil {
			t.Error("acquire at capacity returned no error after cancel")
		}
		b.release()
		c.release()
		if s.count() != 0 {
			t.Errorf("count = %d after releasing all, want 0", s.count())
		}
		u := newSlots(0)
		for range 100 {
			u.acquire(ctx)
		}
		if u.count() != 100 {
			t.Errorf("unlimited count = %d", u.count())
		}
	})
}

// TestPollClientsRounded: the Clients field counts held slots (the polling
// one included), rounded down to a multiple of 8.
func TestPollClientsRounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBroker(t)
		p, stop := startSynctestProxy(t, b, nil)
		var held []*slot
		for range 9 { // 9 busy sessions + the polling slot = 10 → 8
			sl, _ := p.slots.acquire(context.Background())
			held = append(held, sl)
		}
		time.Sleep(21 * time.Second)
		stop()
		for _, sl := range held {
			sl.release()
		}
		polls := b.recorded()
		if len(polls) != 2 || polls[1].req.Clients != 8 {
			t.Fatalf("polls %+v, want the second with Clients 8", polls)
		}
	})
}

func TestNewConfigErrors(t *testing.T) {
	ok := Config{BrokerURL: "https://b.example/", RelayURL: "wss://relay.example/"}
	if p, err := New(ok); err != nil || p.s.AllowedRelayPattern != "relay.example$" {
		t.Fatalf("New(%+v) = %v; pattern %q", ok, err, p.s.AllowedRelayPattern)
	}
	tests := []struct {
		name string
		mod  func(*Config)
	}{
		{"no broker", func(c *Config) { c.BrokerURL = "" }},
		{"broker not http", func(c *Config) { c.BrokerURL = "ftp://b.example/" }},
		{"no relay and no pattern", func(c *Config) { c.RelayURL = "" }},
		{"pattern without $", func(c *Config) { c.AllowedRelayPattern = "relay.example" }},
		{"relay outside pattern", func(c *Config) { c.AllowedRelayPattern = "other.example$" }},
		{"relay ws without flag", func(c *Config) { c.RelayURL = "ws://relay.example/" }},
		{"relay private", func(c *Config) { c.RelayURL = "wss://127.0.0.1/"; c.AllowedRelayPattern = "$" }},
		{"negative capacity", func(c *Config) { c.Capacity = -1 }},
		{"turn server", func(c *Config) { c.STUNURLs = []string{"turn:t.example"} }},
		{"outbound and keep local", func(c *Config) { c.OutboundAddress = "1.2.3.4"; c.KeepLocalAddresses = true }},
		{"outbound not IP", func(c *Config) { c.OutboundAddress = "host" }},
		{"half port range", func(c *Config) { c.PortMin = 5 }},
		{"negative timeout", func(c *Config) { c.InactivityTimeout = -1 }},
		{"min above max poll", func(c *Config) { c.MinPollInterval = time.Hour; c.MaxPollInterval = time.Minute }},
		{"probe not http", func(c *Config) { c.NATProbeURL = "stun:x" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.mod(&c)
			if _, err := New(c); !errors.Is(err, ErrInvalidConfig) {
				t.Errorf("New(%+v) = %v, want ErrInvalidConfig", c, err)
			}
		})
	}
}

// TestMetricsHandler checks the exposition of a fresh proxy.
func TestMetricsHandler(t *testing.T) {
	p, err := New(Config{BrokerURL: "https://b.example/", RelayURL: "wss://relay.example/"})
	if err != nil {
		t.Fatal(err)
	}
	p.m.addToClient(1500)
	p.m.addFromClient(20)
	p.m.failed(FailRelay)
	rec := httptest.NewRecorder()
	p.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	body := rec.Body.String()
	for _, want := range []string{
		"flurry_proxy_connected_clients 0",
		"flurry_proxy_connections_total 0",
		`flurry_proxy_connection_failures_total{reason="relay"} 1`,
		`flurry_proxy_connection_failures_total{reason="answer"} 0`,
		"flurry_proxy_traffic_inbound_bytes_total 1500",
		"flurry_proxy_traffic_outbound_bytes_total 20",
		`flurry_proxy_nat_type{type="unknown"} 1`,
		`flurry_proxy_nat_type{type="unrestricted"} 0`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("metrics include the default registry's Go collectors")
	}
	var s Stats = p.Stats()
	if _, err := json.Marshal(s); err != nil || s.BytesToClient != 1500 || s.Failures != 1 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestRunServesMetrics: with MetricsAddress, Run serves the metrics at
// MetricsPath until its context ends, then stops listening.
func TestRunServesMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p, err := New(Config{BrokerURL: "http://127.0.0.1:1/", AllowedRelayPattern: "relay.invalid$", MetricsAddress: addr, LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + MetricsPath)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: %v", err)
		}
	}
	if !strings.Contains(string(body), "flurry_proxy_connected_clients 0") {
		t.Errorf("metrics:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the metrics listener is still open after Run returned")
	}
}

// TestPollSoonAfterMatch: after a client match the next poll comes after
// MinPollInterval, not the broker's NextPoll, since more clients may be
// waiting; after "no match" the NextPoll holds again.
func TestPollSoonAfterMatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newTestBroker(t)
		b.reply = func(n int, _ messages.ProxyPollRequest) (int, []byte) {
			if n < 2 {
				// A relay outside the pattern: the session fails at
				// once, without the network, and frees its slot.
				return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{
					Status: messages.StatusClientMatch, Offer: `{"type":"offer","sdp":"v=0"}`, NextPoll: 20000, RelayURL: "wss://other.example/"})
			}
			return http.StatusOK, encodePollResponse(t, messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20000})
		}
		start := time.Now()
		_, stop := startSynctestProxy(t, b, nil)
		time.Sleep(23 * time.Second)
		stop()
		var got []time.Duration
		for _, p := range b.recorded() {
			got = append(got, p.at.Sub(start))
		}
		want := []time.Duration{0, time.Second, 2 * time.Second, 22 * time.Second}
		if !slices.Equal(got, want) {
			t.Errorf("polls at %v, want %v", got, want)
		}
	})
}
