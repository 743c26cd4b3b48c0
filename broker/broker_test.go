package broker_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

const (
	longHold   = time.Minute // polls that tests end explicitly
	vectorSid  = "q0Dq3Cq4t2o0kB4QeWm2Vw"
	otherFP    = "0123456789ABCDEF0123456789ABCDEF01234567" // relay.example.org in bridges-snowflake.ndjson
	snowflakeP = "snowflake.torproject.net$"
)

func ptr(s string) *string { return &s }

// proxyPoll encodes a 1.3 proxy poll.
func proxyPoll(t testing.TB, sid, nat string, clients int, pattern *string) []byte {
	t.Helper()
	b, err := messages.ProxyPollRequest{Sid: sid, Type: messages.ProxyTypeStandalone, NAT: nat, Clients: clients, AcceptedRelayPattern: pattern}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sd encodes a session description whose SDP (a data channel offer a
// proxy could answer, see dataChannelSDP) carries tag and one candidate.
func sd(t testing.TB, typ, tag string) string {
	t.Helper()
	s, err := messages.SessionDescription{Type: typ, SDP: dataChannelSDP(tag, "a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host")}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dataChannelSDP is the SDP of a data channel offer as pion writes it,
// with an "a=tag:" line carrying tag and the given candidate lines.
func dataChannelSDP(tag string, candidates ...string) string {
	s := "v=0\r\no=- 7207834799972382898 1795978629 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
		"a=fingerprint:sha-256 E6:19:09:28:58:5F:E3:26:C7:18:13:B6:08:8D:49:E9:72:10:E7:5F:09:DB:B4:CD:51:71:56:D3:14:22:05:9B\r\n" +
		"a=group:BUNDLE 0\r\na=tag:" + tag + "\r\n" +
		"m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\n" +
		"a=sctp-port:5000\r\na=ice-ufrag:YOnMbdqrylXCBgky\r\na=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\n"
	for _, c := range candidates {
		s += c + "\r\n"
	}
	return s
}

func clientPoll(t testing.TB, offer, nat, fingerprint string) []byte {
	t.Helper()
	b, err := messages.ClientPollRequest{Offer: offer, NAT: nat, Fingerprint: fingerprint}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func proxyAnswer(t testing.TB, sid, answer string) []byte {
	t.Helper()
	b, err := messages.ProxyAnswerRequest{Sid: sid, Answer: answer}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// async runs f in a goroutine and returns its result channel.
func async(f func() response) <-chan response {
	ch := make(chan response, 1)
	go func() { ch <- f() }()
	return ch
}

func snowflakeBridges(t testing.TB) string {
	t.Helper()
	return "testdata/bridges-snowflake.ndjson"
}

// snowflakeBridge is Snowflake's default bridge alone, in memory.
var snowflakeBridge = []broker.Bridge{{DisplayName: "d", WebSocketAddress: "wss://snowflake.torproject.net/", Fingerprint: "2B280B23E1107BB62ABFC40DDCC8824814F80A72"}}

// TestGoldenRendezvous runs a whole rendezvous with Snowflake's own wire
// vectors and checks every response byte for byte.
func TestGoldenRendezvous(t *testing.T) {
	for _, mode := range serveModes {
		t.Run(mode.name, func(t *testing.T) {
			// Twice: the second poll follows a match (the grace mode's
			// delay before parking) on a reused connection.
			tb := mode.start(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})
			goldenRendezvous(t, tb)
			goldenRendezvous(t, tb)
		})
	}
}

func goldenRendezvous(t *testing.T, tb *testBroker) {
	proxyRes := async(func() response { return tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
	tb.rec.waitStarted(t, 1)
	clientRes := async(func() response { return tb.post(t, "/client", vector(t, "client-poll-request-1.0.txt")) })

	expect(t, "proxy poll", <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))
	expect(t, "answer", tb.post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	expect(t, "client", <-clientRes, http.StatusOK, vector(t, "client-poll-response-answer.json"))
	// The session is over: a repeated answer finds nobody.
	expect(t, "repeated answer", tb.post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-client-gone.json"))
}

func TestProxyNoMatch(t *testing.T) {
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: time.Millisecond})
	expect(t, "1.3 poll", tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
	// The older helper's empty pattern means "anywhere": accepted.
	expect(t, "empty pattern", tb.post(t, "/proxy", vector(t, "proxy-poll-request-legacy-empty-pattern.json")), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
	if s := tb.Stats(); s != (broker.Stats{}) {
		t.Errorf("Stats after the polls ended = %+v", s)
	}
}

func TestProxyIncorrectRelayPattern(t *testing.T) {
	incorrect := vector(t, "proxy-poll-response-incorrect-relay-pattern.json")
	tests := []struct {
		name    string
		allowed string
		body    string
	}{
		{"missing pattern (1.2 proxy)", "", `{"Sid":"abc","Version":"1.2","Type":"standalone","NAT":"unrestricted","Clients":0}`},
		{"null pattern", "", `{"Sid":"abc","Version":"1.3","AcceptedRelayPattern":null}`},
		{"accepts no bridge", "", `{"Sid":"abc","Version":"1.3","AcceptedRelayPattern":"example.com$"}`},
		{"browser pattern accepts no bridge", "", `{"Sid":"abc","Version":"1.3","AcceptedRelayPattern":"example.com"}`},
		{"narrower than allowed", snowflakeP, `{"Sid":"abc","Version":"1.3","AcceptedRelayPattern":"^snowflake.torproject.net$"}`},
		{"other domain than allowed", snowflakeP, `{"Sid":"abc","Version":"1.3","AcceptedRelayPattern":"example.org$"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := broker.Config{ProxyHold: time.Millisecond, AllowedRelayPattern: tt.allowed}
			if tt.allowed == "" {
				cfg.BridgeListPath = snowflakeBridges(t)
			} else {
				cfg.Bridges = snowflakeBridge
			}
			tb := newTestBroker(t, cfg)
			expect(t, "poll", tb.post(t, "/proxy", []byte(tt.body)), http.StatusOK, incorrect)
			if len(tb.rec.rejected) != 1 {
				t.Errorf("%d ProxyPollRejected events, want 1", len(tb.rec.rejected))
			}
		})
	}
	t.Run("superset of allowed", func(t *testing.T) {
		tb := newTestBroker(t, broker.Config{
			ProxyHold:           time.Millisecond,
			AllowedRelayPattern: "^snowflake.torproject.net$",
			Bridges:             snowflakeBridge,
		})
		expect(t, "poll", tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
	})
	// Snowflake's web extension and badge send their pattern without the
	// trailing '$', which Snowflake's broker accepts.
	for _, allowed := range []string{"", snowflakeP, "^snowflake.torproject.net$"} {
		t.Run("browser pattern, allowed "+allowed, func(t *testing.T) {
			tb := newTestBroker(t, broker.Config{
				ProxyHold:           time.Millisecond,
				AllowedRelayPattern: allowed,
				Bridges:             snowflakeBridge,
			})
			body := `{"Sid":"abc","Version":"1.3","Type":"webext","NAT":"unknown","Clients":0,"AcceptedRelayPattern":"snowflake.torproject.net"}`
			expect(t, "poll", tb.post(t, "/proxy", []byte(body)), http.StatusOK, vector(t, "proxy-poll-response-nomatch.json"))
		})
	}
}

func TestProxyBadRequests(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: time.Millisecond})
	tests := []struct {
		name   string
		body   string
		status int
		reason string
	}{
		{"empty", "", 400, "malformed message"},
		{"not json", "hello", 400, "malformed message"},
		{"empty object", "{}", 400, "unsupported message version"},
		{"version 2", `{"Sid":"a","Version":"2.0"}`, 400, "unsupported message version"},
		{"no sid", `{"Version":"1.3","AcceptedRelayPattern":""}`, 400, "no supplied session id"},
		{"bad sid", `{"Sid":"<script>","Version":"1.3","AcceptedRelayPattern":""}`, 400, "invalid session id"},
		{"bad nat", `{"Sid":"a","Version":"1.3","NAT":"open","AcceptedRelayPattern":""}`, 400, "invalid NAT type"},
		{"wrong type", `{"Sid":1,"Version":"1.3"}`, 400, "malformed message"},
		{"too large", strings.Repeat(" ", messages.MaxBodySize+1), 413, "request body too large"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tb.post(t, "/proxy", []byte(tt.body))
			expect(t, "poll", got, tt.status, []byte(tt.reason+"\n"))
			if o := got.header.Get("Access-Control-Allow-Origin"); o != "*" {
				t.Errorf("Access-Control-Allow-Origin = %q on an error", o)
			}
		})
	}
	// A body of exactly the limit is read (and then rejected as JSON).
	expect(t, "limit", tb.post(t, "/proxy", bytes.Repeat([]byte(" "), messages.MaxBodySize)), 400, []byte("malformed message\n"))
}

func TestDuplicateSid(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	body := proxyPoll(t, "dupsid", messages.NATUnrestricted, 0, ptr(""))
	first := async(func() response { return tb.post(t, "/proxy", body) })
	tb.rec.waitStarted(t, 1)
	expect(t, "second poll", tb.post(t, "/proxy", body), http.StatusBadRequest, []byte("duplicate session id\n"))
	tb.Close()
	nm, _ := messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: 20000}.Encode()
	expect(t, "first poll", <-first, http.StatusOK, nm)
}

func TestClientResponses(t *testing.T) {
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})
	offer := string(vector(t, "sdp-offer.json"))
	errBody := func(s string) []byte {
		b, err := messages.ClientPollResponse{Error: s}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tests := []struct {
		name string
		body string
		want []byte
	}{
		{"no proxies (vector)", string(vector(t, "client-poll-request-1.0.txt")), vector(t, "client-poll-response-no-proxies.json")},
		{"no proxies (other bridge)", string(vector(t, "client-poll-request-1.0-fingerprint.txt")), vector(t, "client-poll-response-no-proxies.json")},
		{"version 2.0", "2.0\n{}", errBody("unsupported message version")},
		{"no framing", "offer", errBody("unsupported message version")},
		{"empty", "", errBody("unsupported message version")},
		{"no offer", "1.0\n{\"nat\":\"unknown\"}", errBody("no supplied offer")},
		{"bad offer", "1.0\n{\"offer\":\"{\\\"type\\\":1}\"}", nil},
		{"bad nat", "1.0\n{\"offer\":" + quote(offer) + ",\"nat\":\"open\"}", errBody("invalid NAT type")},
		{"bad fingerprint", "1.0\n{\"offer\":" + quote(offer) + ",\"fingerprint\":\"xyz\"}", errBody("cannot decode fingerprint")},
		{"unknown bridge", "1.0\n{\"offer\":" + quote(offer) + ",\"fingerprint\":\"" + strings.Repeat("AB", 20) + "\"}", errBody(messages.StrUnknownBridge)},
		{"bad json", "1.0\n{", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tb.post(t, "/client", []byte(tt.body))
			if tt.want == nil {
				// Only the shape: Snowflake's text comes from encoding/json.
				r, err := messages.DecodeClientPollResponse(got.body)
				if got.status != http.StatusOK || err != nil || r.Error == "" {
					t.Errorf("got %d %q, want 200 with an error", got.status, got.body)
				}
				return
			}
			expect(t, "client", got, http.StatusOK, tt.want)
		})
	}
}

func quote(s string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q", s)
	return b.String()
}

func TestClientTimeout(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold, ClientTimeout: 50 * time.Millisecond})
	proxyRes := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "slowproxy", messages.NATRestricted, 0, ptr("")))
	})
	tb.rec.waitStarted(t, 1)
	offer := sd(t, "offer", "c1")
	expect(t, "client", tb.post(t, "/client", clientPoll(t, offer, messages.NATUnrestricted, "")), http.StatusOK, vector(t, "client-poll-response-timeout.json"))
	got := <-proxyRes
	if r, err := messages.DecodeProxyPollResponse(got.body); err != nil || r.Status != messages.StatusClientMatch || r.Offer != offer || r.RelayURL != broker.DefaultRelayURL || r.NAT != messages.NATUnrestricted {
		t.Fatalf("proxy got %d %q (%v)", got.status, got.body, err)
	}
	// The late answer: client gone, and nothing blocks (Snowflake item 11).
	expect(t, "late answer", tb.post(t, "/answer", proxyAnswer(t, "slowproxy", sd(t, "answer", "late"))), http.StatusOK, vector(t, "proxy-answer-response-client-gone.json"))
}

func TestLegacyClient(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold, ClientTimeout: time.Minute})
	offer := []byte(sd(t, "offer", "legacy"))
	natHeader := func(v string) http.Header { return http.Header{"Snowflake-Nat-Type": {v}} }

	expect(t, "no proxies", tb.do(t, "POST", "/client", offer, nil), http.StatusServiceUnavailable, []byte{})

	// Matched and answered: the bare answer.
	proxyRes := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "legacyproxy", messages.NATUnrestricted, 0, ptr("")))
	})
	tb.rec.waitStarted(t, 1)
	clientRes := async(func() response { return tb.do(t, "POST", "/client", offer, natHeader("restricted")) })
	got := <-proxyRes
	r, err := messages.DecodeProxyPollResponse(got.body)
	if err != nil || r.Offer != string(offer) || r.NAT != messages.NATRestricted {
		t.Fatalf("proxy got %q (%v)", got.body, err)
	}
	answer := sd(t, "answer", "legacy")
	expect(t, "answer", tb.post(t, "/answer", proxyAnswer(t, "legacyproxy", answer)), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	expect(t, "client", <-clientRes, http.StatusOK, []byte(answer))

	// Matched, never answered: 504.
	short := newTestBroker(t, broker.Config{ProxyHold: longHold, ClientTimeout: 50 * time.Millisecond})
	proxyRes = async(func() response {
		return short.post(t, "/proxy", proxyPoll(t, "legacyproxy2", messages.NATUnrestricted, 0, ptr("")))
	})
	short.rec.waitStarted(t, 1)
	expect(t, "timeout", short.do(t, "POST", "/client", offer, nil), http.StatusGatewayTimeout, []byte{})
	<-proxyRes

	// Errors Snowflake panics on get 400 with a reason.
	expect(t, "bad nat", tb.do(t, "POST", "/client", offer, natHeader("open")), http.StatusBadRequest, []byte("invalid NAT type\n"))
	expect(t, "bad offer", tb.do(t, "POST", "/client", []byte(`{"type":5}`), nil), http.StatusBadRequest, []byte("malformed session description\n"))
	expect(t, "bad json", tb.do(t, "POST", "/client", []byte(`{`), nil), http.StatusBadRequest, []byte("malformed session description\n"))
}

func TestLegacyClientUnknownBridge(t *testing.T) {
	// A list without the default fingerprint: Snowflake panics.
	tb := newTestBroker(t, broker.Config{Bridges: []broker.Bridge{{WebSocketAddress: "wss://a.example/", Fingerprint: otherFP}}})
	expect(t, "legacy", tb.post(t, "/client", []byte(sd(t, "offer", "x"))), http.StatusBadRequest, []byte(messages.StrUnknownBridge+"\n"))
}

func TestAnswerErrors(t *testing.T) {
	tb := newTestBroker(t, broker.Config{})
	noCandidate, _ := messages.SessionDescription{Type: "answer", SDP: "v=0\r\n"}.Encode()
	tests := []struct {
		name   string
		body   []byte
		status int
		want   string
	}{
		{"empty", nil, 400, "malformed message\n"},
		{"no sid", []byte(`{"Version":"1.3","Answer":"{}"}`), 400, "no supplied session id\n"},
		{"no answer", []byte(`{"Version":"1.3","Sid":"abc"}`), 400, "no supplied answer\n"},
		{"bad answer", []byte(`{"Version":"1.3","Sid":"abc","Answer":"a=candidate"}`), 400, "malformed session description\n"},
		{"no candidate", proxyAnswer(t, "abc", noCandidate), 400, "answer has no ICE candidate\n"},
		{"unknown sid", proxyAnswer(t, "abc", sd(t, "answer", "x")), 200, string(vector(t, "proxy-answer-response-client-gone.json"))},
		{"too large", bytes.Repeat([]byte("a"), messages.MaxBodySize+1), 413, "request body too large\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expect(t, "answer", tb.post(t, "/answer", tt.body), tt.status, []byte(tt.want))
		})
	}
}

func TestCORSMethodsAndRobots(t *testing.T) {
	tb := newTestBroker(t, broker.Config{})
	for _, path := range []string{"/proxy", "/client", "/answer"} {
		t.Run(path, func(t *testing.T) {
			got := tb.do(t, http.MethodOptions, path, nil, http.Header{"Origin": {"moz-extension://x"}})
			expect(t, "OPTIONS", got, http.StatusOK, []byte{})
			if got.header.Get("Access-Control-Allow-Origin") != "*" || got.header.Get("Access-Control-Allow-Headers") != "Origin, X-Session-ID" {
				t.Errorf("preflight headers = %v", got.header)
			}
			for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
				got := tb.do(t, m, path, nil, nil)
				expect(t, m, got, http.StatusMethodNotAllowed, []byte("method not allowed\n"))
				if got.header.Get("Allow") != "OPTIONS, POST" || got.header.Get("Access-Control-Allow-Origin") != "*" {
					t.Errorf("%s headers = %v", m, got.header)
				}
			}
		})
	}
	got := tb.do(t, http.MethodGet, "/robots.txt", nil, nil)
	expect(t, "robots", got, http.StatusOK, []byte("User-agent: *\nDisallow: /\n"))
	if got.header.Get("Access-Control-Allow-Origin") != "" {
		t.Error("robots.txt carries CORS headers")
	}
	// /debug and /metrics carry Snowflake's CORS headers too.
	for _, path := range []string{"/debug", "/metrics"} {
		got := tb.do(t, http.MethodOptions, path, nil, nil)
		expect(t, "OPTIONS "+path, got, http.StatusOK, []byte{})
		if got.header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("OPTIONS %s headers = %v", path, got.header)
		}
		if got := tb.do(t, http.MethodPost, path, nil, nil); got.status != http.StatusMethodNotAllowed {
			t.Errorf("POST %s = %d, want 405", path, got.status)
		}
	}
	for _, path := range []string{"/nonexistent", "/status/x", "/index.html", "/prometheus/x", "/debug/x"} {
		if got := tb.do(t, http.MethodGet, path, nil, nil); got.status != http.StatusNotFound {
			t.Errorf("%s = %d, want 404", path, got.status)
		}
	}
}

func TestTrustedProxies(t *testing.T) {
	cfg := broker.Config{ProxyRate: 0.001, ProxyBurst: 1}
	xff := func(a string) http.Header { return http.Header{"X-Forwarded-For": {a}} }

	// Not trusted: the header is ignored, every request is 127.0.0.1's.
	tb := newTestBroker(t, cfg)
	tb.do(t, "POST", "/proxy", nil, xff("192.0.2.1"))
	if got := tb.do(t, "POST", "/proxy", nil, xff("192.0.2.2")); got.status != http.StatusTooManyRequests {
		t.Errorf("untrusted peer: second address got %d, want 429 (header ignored)", got.status)
	}

	cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tb = newTestBroker(t, cfg)
	if got := tb.do(t, "POST", "/proxy", nil, xff("192.0.2.1")); got.status != http.StatusBadRequest {
		t.Fatalf("first = %d", got.status)
	}
	if got := tb.do(t, "POST", "/proxy", nil, xff("192.0.2.2")); got.status != http.StatusBadRequest {
		t.Errorf("trusted peer: another client address got %d, want 400 (own bucket)", got.status)
	}
	if got := tb.do(t, "POST", "/proxy", nil, xff("192.0.2.1")); got.status != http.StatusTooManyRequests {
		t.Errorf("trusted peer: repeated client address got %d, want 429", got.status)
	}
	tb.rec.mu.Lock()
	defer tb.rec.mu.Unlock()
	if len(tb.rec.addrs) == 0 || tb.rec.addrs[0] != netip.MustParseAddr("192.0.2.1") {
		t.Errorf("event addresses = %v, want the forwarded client first", tb.rec.addrs)
	}
}

// TestIgnoredForwardingWarning: forwarding headers from an untrusted
// loopback peer (a local reverse proxy missing from -trusted-proxies) are
// ignored, and the broker says so once; from a trusted peer it says nothing.
func TestIgnoredForwardingWarning(t *testing.T) {
	xff := http.Header{"X-Forwarded-For": {"192.0.2.1"}}
	const warning = "add its address to -trusted-proxies"
	for _, trusted := range []bool{false, true} {
		logs := &lockedBuffer{}
		cfg := broker.Config{Logger: newTextLogger(logs)}
		if trusted {
			cfg.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		}
		tb := newTestBroker(t, cfg)
		for range 3 {
			tb.do(t, "POST", "/proxy", nil, xff)
		}
		got := strings.Count(logs.String(), warning)
		if want := map[bool]int{false: 1, true: 0}[trusted]; got != want {
			t.Errorf("trusted=%v: warned %d times, want %d:\n%s", trusted, got, want, logs.String())
		}
		if strings.Contains(logs.String(), "192.0.2.1") {
			t.Errorf("trusted=%v: the forwarded address reached the log", trusted)
		}
	}
}

func TestRelayPatternMatching(t *testing.T) {
	tb := newTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})
	// The snowflake-only proxy is the least loaded, but cannot serve the
	// client of relay.example.org.
	snowRes := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "snow", messages.NATUnrestricted, 0, ptr(snowflakeP)))
	})
	tb.rec.waitStarted(t, 1)
	otherRes := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "other", messages.NATUnrestricted, 8, ptr("example.org$")))
	})
	tb.rec.waitStarted(t, 1)

	offer := sd(t, "offer", "o")
	clientRes := async(func() response {
		return tb.post(t, "/client", clientPoll(t, offer, messages.NATUnrestricted, otherFP))
	})
	got := <-otherRes
	r, err := messages.DecodeProxyPollResponse(got.body)
	if err != nil || r.Status != messages.StatusClientMatch || r.RelayURL != "wss://relay.example.org/" {
		t.Fatalf("example.org proxy got %q (%v)", got.body, err)
	}
	tb.post(t, "/answer", proxyAnswer(t, "other", sd(t, "answer", "a")))
	<-clientRes

	// No proxy left for relay.example.org, although one waits.
	expect(t, "second client", tb.post(t, "/client", clientPoll(t, offer, messages.NATUnrestricted, otherFP)), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
	// The snowflake proxy serves a client of 02.snowflake.torproject.net.
	clientRes = async(func() response {
		return tb.post(t, "/client", clientPoll(t, offer, messages.NATUnrestricted, "8838024498816A039FCBBAB14E6F40A0843051FA"))
	})
	got = <-snowRes
	if r, err := messages.DecodeProxyPollResponse(got.body); err != nil || r.RelayURL != "wss://02.snowflake.torproject.net/" {
		t.Fatalf("snowflake proxy got %q (%v)", got.body, err)
	}
	tb.post(t, "/answer", proxyAnswer(t, "snow", sd(t, "answer", "b")))
	<-clientRes
}

func TestNATPoolsOverHTTP(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	proxyRes := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "restricted", messages.NATRestricted, 0, ptr("")))
	})
	tb.rec.waitStarted(t, 1)
	offer := sd(t, "offer", "o")
	for _, nat := range []string{messages.NATRestricted, messages.NATUnknown, ""} {
		expect(t, "client "+nat, tb.post(t, "/client", clientPoll(t, offer, nat, "")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
	}
	clientRes := async(func() response { return tb.post(t, "/client", clientPoll(t, offer, messages.NATUnrestricted, "")) })
	if r, err := messages.DecodeProxyPollResponse((<-proxyRes).body); err != nil || r.Status != messages.StatusClientMatch {
		t.Fatalf("restricted proxy not matched with the unrestricted client: %v", err)
	}
	tb.post(t, "/answer", proxyAnswer(t, "restricted", sd(t, "answer", "a")))
	<-clientRes
}

func TestProxyDisconnectLeavesPool(t *testing.T) {
	for _, mode := range serveModes {
		t.Run(mode.name, func(t *testing.T) {
			proxyDisconnectLeavesPool(t, mode.start(t, broker.Config{ProxyHold: longHold}))
		})
	}
}

func proxyDisconnectLeavesPool(t *testing.T, tb *testBroker) {
	req, err := http.NewRequest(http.MethodPost, tb.srv.URL+"/proxy", bytes.NewReader(proxyPoll(t, "leaver", messages.NATUnrestricted, 0, ptr(""))))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	req = req.WithContext(ctx)
	done := make(chan error, 1)
	go func() {
		resp, err := tb.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	tb.rec.waitStarted(t, 1)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("request error = %v", err)
	}
	// The broker notices the disconnect and takes the proxy out at once.
	if outcome := <-tb.rec.endedCh; outcome != event.ProxyGone {
		t.Errorf("outcome = %v, want gone", outcome)
	}
	if s := tb.Stats(); s != (broker.Stats{}) {
		t.Errorf("Stats = %+v, want empty", s)
	}
	expect(t, "client", tb.post(t, "/client", clientPoll(t, sd(t, "offer", "x"), messages.NATUnrestricted, "")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
}

func TestClose(t *testing.T) {
	for _, mode := range serveModes {
		t.Run(mode.name, func(t *testing.T) { shutdown(t, mode.start(t, broker.Config{ProxyHold: longHold})) })
	}
}

func shutdown(t *testing.T, tb *testBroker) {
	const n = 20
	results := make([]<-chan response, n)
	for i := range n {
		results[i] = async(func() response {
			return tb.post(t, "/proxy", proxyPoll(t, fmt.Sprint("p", i), []string{"unrestricted", "restricted", "unknown"}[i%3], 0, ptr("")))
		})
	}
	tb.rec.waitStarted(t, n)
	start := time.Now()
	tb.Close()
	tb.Close() // idempotent
	nm := vector(t, "proxy-poll-response-nomatch.json")
	for _, res := range results {
		expect(t, "waiting poll", <-res, http.StatusOK, nm)
	}
	// "At once": long before the polls' hold (a minute) would have ended
	// them; the bound is loose for a loaded machine.
	if d := time.Since(start); d > longHold/4 {
		t.Errorf("%d waiting polls answered %v after Close, want well under their %v hold", n, d, longHold)
	}
	expect(t, "new poll", tb.post(t, "/proxy", proxyPoll(t, "late", "unrestricted", 0, ptr(""))), http.StatusOK, nm)
	expect(t, "new client", tb.post(t, "/client", clientPoll(t, sd(t, "offer", "x"), "unrestricted", "")), http.StatusOK, vector(t, "client-poll-response-no-proxies.json"))
}

func TestPollIntervals(t *testing.T) {
	path := writeFile(t, "poll.json", `{"unrestricted_poll_interval": 15000, "restricted_poll_interval": 30000}`)
	tb := newTestBroker(t, broker.Config{PollIntervalPath: path, ProxyHold: time.Millisecond})
	check := func(nat string, want int64) {
		t.Helper()
		got := tb.post(t, "/proxy", proxyPoll(t, "iv"+nat, nat, 0, ptr("")))
		r, err := messages.DecodeProxyPollResponse(got.body)
		if err != nil || r.Status != messages.StatusNoMatch || r.NextPoll != want {
			t.Errorf("%s proxy got %q (%v), want NextPoll %d", nat, got.body, err, want)
		}
	}
	check(messages.NATUnrestricted, 15000)
	check(messages.NATRestricted, 30000)
	check(messages.NATUnknown, 30000)

	// Reload: a missing key falls back to the default.
	if err := os.WriteFile(path, []byte(`{"restricted_poll_interval": 5000}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := tb.ReloadPollIntervals(); err != nil {
		t.Fatal(err)
	}
	check(messages.NATUnrestricted, 20000)
	check(messages.NATRestricted, 5000)

	// A bad file is refused and changes nothing.
	for _, bad := range []string{`{"restricted_poll_interval": 0}`, `{"restricted_poll_interval": 3600001}`, `{"restricted": 5000}`, `[`, `{"restricted_poll_interval": "5s"}`} {
		if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := tb.ReloadPollIntervals(); !errors.Is(err, broker.ErrPollIntervals) {
			t.Errorf("reload of %s = %v, want ErrPollIntervals", bad, err)
		}
	}
	if r, u := tb.PollIntervals(); r != 5*time.Second || u != 20*time.Second {
		t.Errorf("intervals after failed reloads = %v, %v", r, u)
	}
	if _, err := broker.New(broker.Config{PollIntervalPath: path}); !errors.Is(err, broker.ErrPollIntervals) {
		t.Errorf("New with a bad file = %v", err)
	}
	noFile, err := broker.New(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := noFile.ReloadPollIntervals(); err != nil {
		t.Errorf("reload without a file = %v, want nil", err)
	}
}

func TestConfigErrors(t *testing.T) {
	tests := map[string]broker.Config{
		"bad allowed pattern":    {AllowedRelayPattern: "no-dollar"},
		"bridge outside allowed": {AllowedRelayPattern: "example.org$"}, // default bridge is 127.0.0.1
		"missing bridge list":    {BridgeListPath: "/nonexistent/bridges"},
		"file and in-memory":     {BridgeListPath: "testdata/bridges-snowflake.ndjson", Bridges: snowflakeBridge},
		"bad in-memory bridge":   {Bridges: []broker.Bridge{{WebSocketAddress: "https://a.example/", Fingerprint: otherFP}}},
		"negative hold":          {ProxyHold: -1},
		"negative timeout":       {ClientTimeout: -1},
		"tiny poll interval":     {PollInterval: time.Millisecond},
		"negative burst":         {ProxyBurst: -1},
		"invalid trusted":        {TrustedProxies: []netip.Prefix{{}}},
		"negative metrics":       {MetricsInterval: -time.Hour},
		"sub-second metrics":     {MetricsInterval: time.Millisecond},
	}
	for name, cfg := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := broker.New(cfg); err == nil {
				t.Fatal("New succeeded")
			}
		})
	}
	// The relay URL must be encodable in a poll response.
	userInfo := []broker.Bridge{{WebSocketAddress: "wss://user:pw@a.example/", Fingerprint: otherFP}}
	if _, err := broker.New(broker.Config{Bridges: userInfo}); !errors.Is(err, broker.ErrBridgeList) {
		t.Errorf("relay URL with user info: %v, want ErrBridgeList", err)
	}
	b, err := broker.New(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	c := b.Config()
	if c.ProxyHold != broker.DefaultProxyHold || c.ClientTimeout != broker.DefaultClientTimeout || c.UnansweredPenalty != broker.DefaultUnansweredPenalty {
		t.Errorf("defaults not filled: %+v", c)
	}
}
