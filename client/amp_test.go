package client_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
)

// testAMPCache stands for an AMP cache in front of the test broker (which
// only speaks POST /client): it decodes the request from the cache URL's
// path, posts it, and armors the reply. It records what it saw.
type testAMPCache struct {
	srv *httptest.Server
	mu  sync.Mutex
	// of every request
	hosts, dialed []string
}

func startTestAMPCache(tb testing.TB, broker *testBroker) *testAMPCache {
	tb.Helper()
	c := &testAMPCache{}
	tr := &http.Transport{}
	tb.Cleanup(tr.CloseIdleConnections)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.hosts = append(c.hosts, r.Host)
		c.mu.Unlock()
		// The publisher is http://broker.test/.
		rest, ok := strings.CutPrefix(r.URL.Path, "/c/broker.test/amp/client/")
		if r.Method != http.MethodGet || !ok {
			http.NotFound(w, r)
			return
		}
		poll, err := amp.DecodePath(rest)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, broker.URL()+"client", bytes.NewReader(poll))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		resp, err := tr.RoundTrip(req)
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(amp.Armor(body))
	}))
	tb.Cleanup(c.srv.Close)
	return c
}

// transport returns a transport whose dials all reach the cache.
func (c *testAMPCache) transport(tb testing.TB) http.RoundTripper {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		c.mu.Lock()
		c.dialed = append(c.dialed, addr)
		c.mu.Unlock()
		var d net.Dialer
		return d.DialContext(ctx, "tcp", c.srv.Listener.Addr().String())
	}}
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}

// TestInProcessEchoAMP runs the in-process chain with the rendezvous
// through an AMP cache (ampcache=), fronted.
func TestInProcessEchoAMP(t *testing.T) {
	relay := startTestRelay(t)
	broker := startTestBroker(t, newTestProxy(t, "p1", relay))
	cache := startTestAMPCache(t, broker)
	c, err := client.New(client.Config{
		BrokerURL:    "http://broker.test/",
		AMPCacheURL:  "http://cache.test/",
		Fronts:       []string{"front.test"},
		LoopbackOnly: true,
		Logger:       chaintest.Logger(t),
	}, client.WithHTTPTransport(cache.transport(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	conn := dial(t, c)
	defer conn.Close()
	checkEcho(t, conn, 256<<10)

	cache.mu.Lock()
	defer cache.mu.Unlock()
	if len(cache.hosts) == 0 {
		t.Fatal("the rendezvous did not go through the cache")
	}
	for i, h := range cache.hosts {
		if h != "broker-test.cache.test" {
			t.Errorf("request %d: Host %q, want broker-test.cache.test", i, h)
		}
	}
	for _, d := range cache.dialed {
		if d != "front.test:80" {
			t.Errorf("dialed %q, want the front front.test:80", d)
		}
	}
}
