package rendezvous

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/messages"
)

// startBroker serves a real broker, with its AMP endpoint, over loopback
// HTTP; it returns the broker and the base URL of the server.
func startBroker(tb testing.TB) (*broker.Broker, string) {
	tb.Helper()
	b, err := broker.New(broker.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", b.Handler())
	mux.Handle(broker.AMPPathPrefix, b.AMPHandler())
	srv := httptest.NewServer(mux)
	tb.Cleanup(func() {
		b.Close()
		srv.Close()
	})
	return b, srv.URL
}

// cacheProxy is a tiny AMP cache: it serves the pages of the publisher
// https://broker.test/ (at /c/s/broker.test/..., on the host
// broker-test.cache.test) by fetching them from the broker at origin.
func cacheProxy(tb testing.TB, origin string) http.HandlerFunc {
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	return func(w http.ResponseWriter, r *http.Request) {
		rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/c/s/broker.test/")
		if r.Method != http.MethodGet || r.Host != "broker-test.cache.test" || !ok {
			http.NotFound(w, r)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, origin+"/"+rest, nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode >= 500 {
			http.NotFound(w, r) // what AMP caches do
			return
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/html" {
			http.Error(w, "not an AMP page: "+ct, http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}
}

// TestAMPWithBroker runs AMP exchanges between this client and Flurry's
// broker through an in-test AMP cache, fronted: no proxy, then a proxy
// that answers.
func TestAMPWithBroker(t *testing.T) {
	b, origin := startBroker(t)
	c := startAMPCache(t, "", cacheProxy(t, origin))
	a, err := NewAMP(AMPConfig{
		Broker:    mustURL(t, ParseBrokerURL, "https://broker.test/"),
		Cache:     mustURL(t, ParseCacheURL, "https://cache.test/"),
		Fronts:    []string{"front-a.test", "front-b.test"},
		Transport: c.tr,
	})
	if err != nil {
		t.Fatal(err)
	}
	// A data channel offer: the broker refuses offers no proxy could answer.
	offer, err := messages.SessionDescription{Type: "offer", SDP: "v=0\r\no=- 7207834799972382898 1795978629 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n" +
		"a=fingerprint:sha-256 E6:19:09:28:58:5F:E3:26:C7:18:13:B6:08:8D:49:E9:72:10:E7:5F:09:DB:B4:CD:51:71:56:D3:14:22:05:9B\r\n" +
		"a=group:BUNDLE 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\na=setup:actpass\r\na=mid:0\r\n" +
		"a=sctp-port:5000\r\na=ice-ufrag:YOnMbdqrylXCBgky\r\na=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\n" +
		"a=candidate:1 1 udp 2130706431 127.0.0.1 9 typ host\r\n"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	request, err := messages.ClientPollRequest{Offer: offer, NAT: messages.NATUnrestricted}.Encode()
	if err != nil {
		t.Fatal(err)
	}

	// No proxy waiting.
	resp, err := a.Exchange(context.Background(), request)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := messages.DecodeClientPollResponse(resp); err != nil || r.Error != messages.StrNoProxies {
		t.Fatalf("response %q (%v), want the no-proxies error", resp, err)
	}
	if s := c.seen(); s.host != "broker-test.cache.test" || !contains([]string{"front-a.test", "front-b.test"}, s.sni) ||
		!contains([]string{"front-a.test:443", "front-b.test:443"}, s.dialed) {
		t.Errorf("cache saw Host %q, SNI %q, dial %q", s.host, s.sni, s.dialed)
	}

	// A proxy polls; the client's exchange matches it; the proxy answers.
	proxyClient := &http.Client{Transport: &http.Transport{}}
	defer proxyClient.CloseIdleConnections()
	poll, err := messages.ProxyPollRequest{Sid: "ampproxy", Type: messages.ProxyTypeStandalone, NAT: messages.NATUnrestricted, AcceptedRelayPattern: ptr("")}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		body []byte
		err  error
	}
	polled := make(chan result, 1)
	go func() {
		r, err := proxyClient.Post(origin+"/proxy", "application/json", bytes.NewReader(poll))
		if err != nil {
			polled <- result{err: err}
			return
		}
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		polled <- result{b, err}
	}()
	// The broker has no hook to say a poll is waiting: watch its pools.
	for b.Stats().WaitingUnrestricted == 0 {
		select {
		case p := <-polled:
			t.Fatalf("proxy poll ended early: %q %v", p.body, p.err)
		default:
			runtime.Gosched()
		}
	}
	exchanged := make(chan result, 1)
	go func() {
		resp, err := a.Exchange(context.Background(), request)
		exchanged <- result{resp, err}
	}()
	p := <-polled
	if p.err != nil {
		t.Fatal(p.err)
	}
	pr, err := messages.DecodeProxyPollResponse(p.body)
	if err != nil || pr.Status != messages.StatusClientMatch || pr.Offer != offer {
		t.Fatalf("proxy poll response %q (%v)", p.body, err)
	}
	answer, err := messages.SessionDescription{Type: "answer", SDP: "v=0\r\na=candidate:1 1 udp 2130706431 127.0.0.1 10 typ host\r\n"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ans, err := messages.ProxyAnswerRequest{Sid: "ampproxy", Answer: answer}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	ar, err := proxyClient.Post(origin+"/answer", "application/json", bytes.NewReader(ans))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, ar.Body)
	ar.Body.Close()
	e := <-exchanged
	if e.err != nil {
		t.Fatal(e.err)
	}
	if r, err := messages.DecodeClientPollResponse(e.body); err != nil || r.Answer != answer {
		t.Fatalf("client response %q (%v), want the answer", e.body, err)
	}
}

func ptr(s string) *string { return &s }
