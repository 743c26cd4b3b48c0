package rendezvous

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/internal/testkit/certtest"
)

// ampRequest is what the test AMP cache saw of one request.
type ampRequest struct {
	dialed string // address the client's dialer was asked for
	sni    string
	host   string // Host header
	method string
	path   string // escaped path
}

// ampCache is a TLS httptest server standing for an AMP cache (and the CDN
// in front of it): every dial from the client reaches it. serve answers
// each request.
type ampCache struct {
	srv   *httptest.Server
	tr    http.RoundTripper
	mu    sync.Mutex
	last  ampRequest
	count int
}

func startAMPCache(tb testing.TB, imitate string, serve http.HandlerFunc) *ampCache {
	tb.Helper()
	c := &ampCache{}
	tc := certtest.New(tb, "cache.test", "*.cache.test", "front-a.test", "front-b.test")
	cert, roots := tc.TLS, tc.Pool
	c.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.last.host, c.last.method, c.last.path = r.Host, r.Method, r.URL.EscapedPath()
		c.count++
		c.mu.Unlock()
		serve(w, r)
	}))
	c.srv.EnableHTTP2 = true
	c.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			c.mu.Lock()
			c.last.sni = chi.ServerName
			c.mu.Unlock()
			return nil, nil
		},
	}
	c.srv.StartTLS()
	tb.Cleanup(c.srv.Close)
	rt, err := NewTransport(TransportConfig{
		UTLSImitate: imitate,
		RootCAs:     roots,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c.mu.Lock()
			c.last.dialed = addr
			c.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "tcp", c.srv.Listener.Addr().String())
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.(interface{ CloseIdleConnections() }).CloseIdleConnections() })
	c.tr = rt
	return c
}

func (c *ampCache) seen() ampRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

// armored answers every request with the armor of body.
func armored(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(amp.Armor([]byte(body)))
	}
}

// TestAMPRequest checks the request an AMP exchange makes: a GET of the
// cache URL of <broker>/amp/client/<encoded request>, fronted or not.
func TestAMPRequest(t *testing.T) {
	const request = "1.0\n{\"offer\":\"o\"}"
	tests := []struct {
		name     string
		broker   string
		cache    string
		fronts   []string
		imitate  string
		wantHost string
		wantPath string // before the encoded request
		wantDial []string
		wantSNI  []string
	}{
		{name: "https broker", broker: "https://broker.test/", cache: "https://cache.test/",
			wantHost: "broker-test.cache.test", wantPath: "/c/s/broker.test/amp/client/",
			wantDial: []string{"broker-test.cache.test:443"}, wantSNI: []string{"broker-test.cache.test"}},
		{name: "http broker, base path, cache path", broker: "http://snow-flake.test:80/base/", cache: "https://cache.test/amp",
			wantHost: "snow--flake-test.cache.test", wantPath: "/amp/c/snow-flake.test/base/amp/client/",
			wantDial: []string{"snow--flake-test.cache.test:443"}, wantSNI: []string{"snow--flake-test.cache.test"}},
		{name: "fronts", broker: "https://broker.test/", cache: "https://cache.test/", fronts: []string{"front-a.test", "front-b.test"},
			wantHost: "broker-test.cache.test", wantPath: "/c/s/broker.test/amp/client/",
			wantDial: []string{"front-a.test:443", "front-b.test:443"}, wantSNI: []string{"front-a.test", "front-b.test"}},
		{name: "fronts with utls", broker: "https://broker.test/", cache: "https://cache.test/", fronts: []string{"front-a.test"}, imitate: "hellochrome_auto",
			wantHost: "broker-test.cache.test", wantPath: "/c/s/broker.test/amp/client/",
			wantDial: []string{"front-a.test:443"}, wantSNI: []string{"front-a.test"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startAMPCache(t, tt.imitate, armored(`{"answer":"x"}`))
			a, err := NewAMP(AMPConfig{Broker: mustURL(t, ParseBrokerURL, tt.broker), Cache: mustURL(t, ParseCacheURL, tt.cache), Fronts: tt.fronts, Transport: c.tr})
			if err != nil {
				t.Fatal(err)
			}
			var paths []string
			for range 4 {
				resp, err := a.Exchange(context.Background(), []byte(request))
				if err != nil || string(resp) != `{"answer":"x"}` {
					t.Fatalf("Exchange = %q, %v", resp, err)
				}
				s := c.seen()
				if s.method != http.MethodGet || s.host != tt.wantHost || !contains(tt.wantDial, s.dialed) || !contains(tt.wantSNI, s.sni) {
					t.Errorf("request %+v, want Host %q, dial %q, SNI %q", s, tt.wantHost, tt.wantDial, tt.wantSNI)
				}
				encoded, ok := strings.CutPrefix(s.path, tt.wantPath)
				if !ok {
					t.Fatalf("path %q, want prefix %q", s.path, tt.wantPath)
				}
				got, err := amp.DecodePath(encoded)
				if err != nil || string(got) != request {
					t.Errorf("path %q decodes to %q, %v", s.path, got, err)
				}
				paths = append(paths, encoded)
			}
			if paths[0] == paths[1] {
				t.Errorf("two requests share a path (no cache-buster): %q", paths[0])
			}
		})
	}
}

// TestAMPExchangeErrors checks the checks on the reply.
func TestAMPExchangeErrors(t *testing.T) {
	// A valid page of exactly MaxResponseSize bytes: armor, then tags to
	// fill (ignored by the decoder).
	page := amp.Armor([]byte(`{"answer":"x"}`))
	fill := MaxResponseSize - len(page)
	full := append(append([]byte(nil), page...), []byte(strings.Repeat("<br>", fill/4)+strings.Repeat(" ", fill%4))...)
	tests := []struct {
		name    string
		handler http.HandlerFunc
		want    error // nil: success
	}{
		{name: "exactly the limit", handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(full) }},
		{name: "one byte over", handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(append(full, ' ')) }, want: ErrResponseTooLarge},
		{name: "404", handler: func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNotFound) }, want: ErrStatus},
		{name: "redirect not followed", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://broker.test/amp/client/", http.StatusFound)
		}, want: ErrStatus},
		{name: "silent redirect", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "https://broker.test/")
			_, _ = w.Write(page)
		}, want: ErrRedirect},
		{name: "empty location", handler: func(w http.ResponseWriter, _ *http.Request) {
			w.Header()["Location"] = []string{""}
			_, _ = w.Write(page)
		}, want: ErrRedirect},
		{name: "not armor", handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte(`{"answer":"x"}`)) }, want: amp.ErrArmor},
		{name: "bad armor version", handler: func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`<pre>1eyJhbnN3ZXIiOiJ4In0=</pre>`))
		}, want: amp.ErrArmorVersion},
		{name: "truncated armor", handler: func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page[:len(page)-30]) }, want: amp.ErrArmor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := startAMPCache(t, "", tt.handler)
			a, err := NewAMP(AMPConfig{Broker: mustURL(t, ParseBrokerURL, "https://broker.test/"), Cache: mustURL(t, ParseCacheURL, "https://cache.test/"), Transport: c.tr})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := a.Exchange(context.Background(), []byte("1.0\n{}"))
			if tt.want == nil {
				if err != nil || string(resp) != `{"answer":"x"}` {
					t.Fatalf("Exchange = %q, %v", resp, err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Exchange error %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("deadline", func(t *testing.T) {
		release := make(chan struct{})
		c := startAMPCache(t, "", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		a, err := NewAMP(AMPConfig{Broker: mustURL(t, ParseBrokerURL, "https://broker.test/"), Cache: mustURL(t, ParseCacheURL, "https://cache.test/"), Transport: c.tr, Timeout: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Exchange(context.Background(), nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Exchange error %v, want context.DeadlineExceeded", err)
		}
	})

	t.Run("caller context", func(t *testing.T) {
		release := make(chan struct{})
		arrived := make(chan struct{}, 1)
		c := startAMPCache(t, "", func(w http.ResponseWriter, r *http.Request) {
			arrived <- struct{}{}
			select {
			case <-r.Context().Done():
			case <-release:
			}
		})
		defer close(release)
		a, err := NewAMP(AMPConfig{Broker: mustURL(t, ParseBrokerURL, "https://broker.test/"), Cache: mustURL(t, ParseCacheURL, "https://cache.test/"), Transport: c.tr})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-arrived
			cancel()
		}()
		if _, err := a.Exchange(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Exchange error %v, want context.Canceled", err)
		}
	})
}

func TestNewAMPValidation(t *testing.T) {
	tests := []struct {
		broker, cache string
		fronts        []string
		want          error
	}{
		{broker: "", cache: "https://cache.test/", want: ErrNoBrokerURL},
		{broker: "https://broker.test/", cache: "", want: ErrNoCacheURL},
		{broker: "ftp://broker.test/", cache: "https://cache.test/", want: ErrBrokerURL},
		{broker: "https://broker.test:8443/", cache: "https://cache.test/", want: ErrBrokerURL},
		{broker: "http://broker.test:443/", cache: "https://cache.test/", want: ErrBrokerURL},
		{broker: "https://broker.test/", cache: "cache.test", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "ftp://cache.test/", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https://cache.test/?q=1", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https://cache.test/?", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https://cache.test/#f", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https://u:p@cache.test/", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https:///x", want: ErrCacheURL},
		{broker: "https://broker.test/", cache: "https://cache.test/", fronts: []string{"a b"}, want: ErrFront},
		{broker: "https://broker.test:443/", cache: "https://cache.test:8443/base", fronts: []string{"front.test"}},
		{broker: "http://127.0.0.1/", cache: "http://cache.test/"},
	}
	for _, tt := range tests {
		t.Run(tt.broker+" "+tt.cache, func(t *testing.T) {
			broker, err := ParseBrokerURL(tt.broker)
			var cache *url.URL
			if err == nil {
				cache, err = ParseCacheURL(tt.cache)
			}
			if err == nil {
				_, err = NewAMP(AMPConfig{Broker: broker, Cache: cache, Fronts: tt.fronts})
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("parse and NewAMP = %v, want %v", err, tt.want)
			}
		})
	}
}

// BenchmarkAMPExchange measures one exchange over loopback TLS (the cache
// answers at once).
func BenchmarkAMPExchange(b *testing.B) {
	c := startAMPCache(b, "", armored(`{"answer":"x"}`))
	a, err := NewAMP(AMPConfig{Broker: mustURL(b, ParseBrokerURL, "https://broker.test/"), Cache: mustURL(b, ParseCacheURL, "https://cache.test/"), Transport: c.tr})
	if err != nil {
		b.Fatal(err)
	}
	req := bytes.Repeat([]byte("a"), 2000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Exchange(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
