package broker_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/messages"
)

// newAMPTestBroker is newTestBroker with AMPHandler mounted at
// AMPPathPrefix next to Handler.
func newAMPTestBroker(t testing.TB, cfg broker.Config) *testBroker {
	t.Helper()
	rec := newRecorder()
	b, err := broker.NewWithSink(cfg, rec)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", b.Handler())
	mux.Handle(broker.AMPPathPrefix, b.AMPHandler())
	srv := httptest.NewServer(mux)
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	t.Cleanup(func() {
		b.Close()
		srv.Close()
		tr.CloseIdleConnections()
	})
	return &testBroker{Broker: b, rec: rec, srv: srv, client: &http.Client{Transport: tr}}
}

// ampGet sends an encoded poll request through the AMP endpoint.
func (tb *testBroker) ampGet(t testing.TB, pollRequest []byte) response {
	t.Helper()
	return tb.do(t, http.MethodGet, broker.AMPPathPrefix+amp.EncodePath(pollRequest), nil, nil)
}

// expectAMP checks an AMP response: 200, Snowflake's headers, and a page
// that is exactly the armor of want.
func expectAMP(t testing.TB, what string, got response, want []byte) {
	t.Helper()
	if got.status != http.StatusOK || got.header.Get("Content-Type") != "text/html" || got.header.Get("Cache-Control") != "max-age=15" ||
		got.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("%s: status %d, headers %v", what, got.status, got.header)
	}
	dec, err := amp.NewArmorDecoder(bytes.NewReader(got.body))
	if err != nil {
		t.Fatalf("%s: %v in %q", what, err, got.body)
	}
	body, err := io.ReadAll(dec)
	if err != nil || !bytes.Equal(body, want) {
		t.Errorf("%s: armored %q (%v), want %q", what, body, err, want)
	}
	if !bytes.Equal(got.body, amp.Armor(want)) {
		t.Errorf("%s: page is not exactly the armor of the response", what)
	}
}

// TestAMPBadPath checks Snowflake's answer to a path that is not an
// encoded poll request, and the path length bound.
func TestAMPBadPath(t *testing.T) {
	tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold})
	want := []byte(`{"error":"cannot decode URL path"}`)
	for _, path := range []string{
		"/amp/client/",
		"/amp/client/0",
		"/amp/client/0foobar",
		"/amp/client/1/MS4wCnt9",
		"/amp/client/0/MS4wCnt9=",
		"/amp/client/0/MS4w+nt9",
		"/amp/client/0/" + strings.Repeat("A", 150000),
	} {
		short := path
		if len(short) > 40 {
			short = short[:40] + "..."
		}
		expectAMP(t, short, tb.do(t, http.MethodGet, path, nil, nil), want)
	}
	// The subtree root without its slash: the mux redirects to
	// /amp/client/ (as in Snowflake), which the test client follows.
	expectAMP(t, "/amp/client", tb.do(t, http.MethodGet, "/amp/client", nil, nil), want)
	tb.rec.mu.Lock()
	defer tb.rec.mu.Unlock()
	for i, o := range tb.rec.clients {
		if o != event.ClientBadRequest || tb.rec.addrs[i].IsValid() {
			t.Errorf("event %d: %v, address %v", i, o, tb.rec.addrs[i])
		}
	}
}

// TestAMPBadRequest checks that a path that decodes to a bad poll request
// gets the decoder's error, as /client does.
func TestAMPBadRequest(t *testing.T) {
	tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold})
	tests := []struct {
		name string
		body string
		want string
	}{
		{"no version", "junk", `{"error":"unsupported message version"}`},
		{"no offer", "1.0\n{}", `{"error":"no supplied offer"}`},
		{"bad nat", "1.0\n" + `{"offer":"{\"type\":\"offer\",\"sdp\":\"v=0\\r\\n\"}","nat":"weird"}`, `{"error":"invalid NAT type"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			http := tb.post(t, "/client", []byte(tt.body))
			if string(http.body) != tt.want {
				t.Fatalf("/client says %q, want %q", http.body, tt.want)
			}
			expectAMP(t, tt.name, tb.ampGet(t, []byte(tt.body)), []byte(tt.want))
		})
	}
	t.Run("unknown bridge", func(t *testing.T) {
		body := clientPoll(t, sd(t, "offer", "c"), messages.NATUnknown, "0000000000000000000000000000000000000000")
		expectAMP(t, "unknown bridge", tb.ampGet(t, body), []byte(`{"error":"`+messages.StrUnknownBridge+`"}`))
	})
}

// TestAMPRendezvous runs Snowflake's golden rendezvous with the client on
// the AMP endpoint: no proxies, an answer, a timeout.
func TestAMPRendezvous(t *testing.T) {
	t.Run("no proxies", func(t *testing.T) {
		tb := newAMPTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})
		expectAMP(t, "client", tb.ampGet(t, vector(t, "client-poll-request-1.0.txt")), vector(t, "client-poll-response-no-proxies.json"))
	})
	t.Run("answer", func(t *testing.T) {
		tb := newAMPTestBroker(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: longHold})
		proxyRes := async(func() response { return tb.post(t, "/proxy", vector(t, "proxy-poll-request-1.3.json")) })
		tb.rec.waitStarted(t, 1)
		clientRes := async(func() response { return tb.ampGet(t, vector(t, "client-poll-request-1.0.txt")) })
		expect(t, "proxy poll", <-proxyRes, http.StatusOK, vector(t, "proxy-poll-response-match.json"))
		expect(t, "answer", tb.post(t, "/answer", vector(t, "proxy-answer-request.json")), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
		expectAMP(t, "client", <-clientRes, vector(t, "client-poll-response-answer.json"))
	})
	t.Run("timeout", func(t *testing.T) {
		tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold, ClientTimeout: 50 * time.Millisecond})
		proxyRes := async(func() response {
			return tb.post(t, "/proxy", proxyPoll(t, "slowproxy", messages.NATRestricted, 0, ptr("")))
		})
		tb.rec.waitStarted(t, 1)
		expectAMP(t, "client", tb.ampGet(t, clientPoll(t, sd(t, "offer", "c1"), messages.NATUnrestricted, "")), vector(t, "client-poll-response-timeout.json"))
		if got := <-proxyRes; !bytes.Contains(got.body, []byte(`"Status":"client match"`)) {
			t.Errorf("proxy got %q", got.body)
		}
	})
}

// TestAMPMethods checks the CORS preflight and the refusal of other methods.
func TestAMPMethods(t *testing.T) {
	tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold})
	path := broker.AMPPathPrefix + amp.EncodePath([]byte("junk"))
	got := tb.do(t, http.MethodOptions, path, nil, nil)
	if got.status != http.StatusOK || len(got.body) != 0 || got.header.Get("Access-Control-Allow-Origin") != "*" ||
		got.header.Get("Access-Control-Allow-Headers") != "Origin, X-Session-ID" {
		t.Errorf("OPTIONS: %d %q %v", got.status, got.body, got.header)
	}
	for _, m := range []string{http.MethodPost, http.MethodHead, http.MethodPut} {
		if got := tb.do(t, m, path, nil, nil); got.status != http.StatusMethodNotAllowed || got.header.Get("Allow") != "GET, OPTIONS" {
			t.Errorf("%s: %d, Allow %q", m, got.status, got.header.Get("Allow"))
		}
	}
	tb.rec.mu.Lock()
	defer tb.rec.mu.Unlock()
	if len(tb.rec.clients) != 0 {
		t.Errorf("client events %v, want none", tb.rec.clients)
	}
}

// ampGeoIPv4 maps 127.0.0.0/8 (where the requests come from: the "cache")
// to AA and 203.0.113.0/24 to CA.
const ampGeoIPv4 = "2130706432,2147483647,AA\n3405803776,3405804031,CA\n"

// offerFrom is a client offer whose candidates are a private host address
// then the given server-reflexive one.
func offerFrom(t testing.TB, srflx string) string {
	t.Helper()
	s, err := messages.SessionDescription{Type: "offer", SDP: dataChannelSDP("",
		"a=candidate:1 1 udp 2130706431 192.168.1.2 40000 typ host",
		"a=candidate:2 1 udp 1694498815 "+srflx+" 40001 typ srflx raddr 192.168.1.2 rport 40000")}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestAMPGeolocation checks that AMP clients are counted by the country of
// the public address in their offer (the request's address is the cache's),
// as in Snowflake's "client-ampcache-ips CA=8", and that an offer with no
// public address counts as "??".
func TestAMPGeolocation(t *testing.T) {
	tests := []struct {
		name  string
		srflx string
		addr  netip.Addr
		line  string
	}{
		{"public candidate", "203.0.113.9", netip.MustParseAddr("203.0.113.9"), "client-ampcache-ips CA=8"},
		{"private only", "10.0.0.9", netip.Addr{}, "client-ampcache-ips ??=8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db, _ := openGeoIP(t, ampGeoIPv4, testGeoIPv6)
			path := filepath.Join(t.TempDir(), "metrics.log")
			tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold, GeoIP: db, MetricsLogPath: path})
			expectAMP(t, "client", tb.ampGet(t, clientPoll(t, offerFrom(t, tt.srflx), messages.NATRestricted, "")), vector(t, "client-poll-response-no-proxies.json"))
			if err := tb.EndMetricsPeriod(); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			body := string(data)
			for _, line := range []string{"client-denied-count 8", "client-restricted-denied-count 8", "client-ampcache-count 8", tt.line, "client-http-count 0", "client-http-ips "} {
				if !strings.Contains(body, "\n"+line+"\n") {
					t.Errorf("descriptor lacks %q:\n%s", line, body)
				}
			}
			tb.rec.mu.Lock()
			defer tb.rec.mu.Unlock()
			if len(tb.rec.addrs) != 1 || tb.rec.addrs[0] != tt.addr {
				t.Errorf("event addresses %v, want [%v]", tb.rec.addrs, tt.addr)
			}
		})
	}
}

// TestAMPLogsNoAddress checks that nothing the broker logs while serving
// an AMP client carries the client's address.
func TestAMPLogsNoAddress(t *testing.T) {
	var logs bytes.Buffer
	tb := newAMPTestBroker(t, broker.Config{ProxyHold: longHold, Logger: newTextLogger(&logs)})
	tb.ampGet(t, clientPoll(t, offerFrom(t, "203.0.113.77"), messages.NATRestricted, ""))
	tb.ampGet(t, []byte("1.0\n"+`{"offer":"x 203.0.113.77"}`))
	tb.do(t, http.MethodGet, "/amp/client/203.0.113.77", nil, nil)
	if strings.Contains(logs.String(), "203.0.113.77") {
		t.Errorf("logs carry the client address:\n%s", logs.String())
	}
}

func newTextLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// FuzzAMPPath sends arbitrary paths to the AMP endpoint: every answer must
// be a 200 page armoring a valid ClientPollResponse.
func FuzzAMPPath(f *testing.F) {
	for _, s := range []string{"", "0", "0/", "0/MS4wCnt9", "0abc/" + strings.TrimPrefix(amp.EncodePath([]byte("1.0\n{}")), "0"), "1/x", "0/\xff"} {
		f.Add(s)
	}
	rec := newRecorder()
	b, err := broker.NewWithSink(broker.Config{ProxyHold: time.Millisecond, ClientTimeout: time.Millisecond}, rec)
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	h := b.AMPHandler()
	f.Fuzz(func(t *testing.T, p string) {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.URL.Path = broker.AMPPathPrefix + p
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusOK {
			t.Fatalf("status %d", w.Code)
		}
		dec, err := amp.NewArmorDecoder(w.Body)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(dec)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := messages.DecodeClientPollResponse(body); err != nil {
			t.Fatalf("response %q: %v", body, err)
		}
	})
}
