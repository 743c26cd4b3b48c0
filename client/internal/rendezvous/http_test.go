package rendezvous

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/certtest"
)

// seen is what the test broker observed about one request.
type seen struct {
	dialed string // address the client's dialer was asked for
	sni    string // TLS server name
	grease bool   // GREASE values in the ClientHello's cipher suites (browser-like)
	host   string // HTTP Host header
	path   string
	proto  string
	body   []byte
	ctype  string
}

// tlsBroker is an httptest TLS server standing for a CDN in front of the
// broker; every dial from the client goes to it, whatever the address.
type tlsBroker struct {
	srv   *httptest.Server
	roots *x509.CertPool
	mu    sync.Mutex
	last  seen
}

func startTLSBroker(tb testing.TB, http2 bool, handler http.HandlerFunc) *tlsBroker {
	tb.Helper()
	b := &tlsBroker{}
	c := certtest.New(tb, "broker.test", "front-a.test", "front-b.test")
	cert, roots := c.TLS, c.Pool
	b.roots = roots
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		b.mu.Lock()
		b.last.host, b.last.path, b.last.proto, b.last.body = r.Host, r.URL.Path, r.Proto, body
		b.last.ctype = r.Header.Get("Content-Type")
		b.mu.Unlock()
		handler(w, r)
	})
	b.srv = httptest.NewUnstartedServer(mux)
	b.srv.EnableHTTP2 = http2
	b.srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{cert},
		GetConfigForClient: func(chi *tls.ClientHelloInfo) (*tls.Config, error) {
			grease := false
			for _, cs := range chi.CipherSuites {
				if cs&0x0f0f == 0x0a0a && cs>>8 == cs&0xff {
					grease = true
				}
			}
			b.mu.Lock()
			b.last.sni, b.last.grease = chi.ServerName, grease
			b.mu.Unlock()
			return nil, nil
		},
	}
	b.srv.StartTLS()
	tb.Cleanup(b.srv.Close)
	return b
}

// transport returns a transport whose dials all reach b, recording the
// address asked for.
func (b *tlsBroker) transport(tb testing.TB, imitate string, noSNI bool) http.RoundTripper {
	tb.Helper()
	rt, err := NewTransport(TransportConfig{
		UTLSImitate:   imitate,
		UTLSRemoveSNI: noSNI,
		RootCAs:       b.roots,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			b.mu.Lock()
			b.last.dialed = addr
			b.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, "tcp", b.srv.Listener.Addr().String())
		},
	})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
			c.CloseIdleConnections()
		}
	})
	return rt
}

func (b *tlsBroker) seen() seen {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last
}

func okHandler(w http.ResponseWriter, _ *http.Request) {
	_, _ = w.Write([]byte(`{"answer":"x"}`))
}

// TestFronting checks where each host name goes: the front in the dialed
// address and the TLS SNI, the broker in the Host header, for Go's TLS and
// for uTLS over HTTP/1.1 and HTTP/2.
func TestFronting(t *testing.T) {
	tests := []struct {
		name       string
		http2      bool
		imitate    string
		noSNI      bool
		fronts     []string
		wantHost   string
		wantDial   []string // one of
		wantSNI    []string // one of
		wantGrease bool
		wantProto  string
	}{
		{name: "no front", wantHost: "broker.test", wantDial: []string{"broker.test:443"}, wantSNI: []string{"broker.test"}, wantProto: "HTTP/1.1"},
		{name: "one front", fronts: []string{"front-a.test"}, wantHost: "broker.test", wantDial: []string{"front-a.test:443"}, wantSNI: []string{"front-a.test"}, wantProto: "HTTP/1.1"},
		{name: "two fronts", fronts: []string{"front-a.test", "front-b.test"}, wantHost: "broker.test",
			wantDial: []string{"front-a.test:443", "front-b.test:443"}, wantSNI: []string{"front-a.test", "front-b.test"}, wantProto: "HTTP/1.1"},
		{name: "go tls h2", http2: true, fronts: []string{"front-a.test"}, wantHost: "broker.test", wantDial: []string{"front-a.test:443"}, wantSNI: []string{"front-a.test"}, wantProto: "HTTP/2.0"},
		{name: "utls chrome h2", http2: true, imitate: "HelloChrome_Auto", fronts: []string{"front-a.test"}, wantHost: "broker.test",
			wantDial: []string{"front-a.test:443"}, wantSNI: []string{"front-a.test"}, wantGrease: true, wantProto: "HTTP/2.0"},
		{name: "utls chrome h1", imitate: "hellochrome_auto", fronts: []string{"front-a.test"}, wantHost: "broker.test",
			wantDial: []string{"front-a.test:443"}, wantSNI: []string{"front-a.test"}, wantGrease: true, wantProto: "HTTP/1.1"},
		{name: "utls randomized no alpn", http2: true, imitate: "hellorandomizednoalpn", fronts: []string{"front-b.test"}, wantHost: "broker.test",
			wantDial: []string{"front-b.test:443"}, wantSNI: []string{"front-b.test"}, wantProto: "HTTP/1.1"},
		{name: "utls no sni", imitate: "hellochrome_auto", noSNI: true, fronts: []string{"front-a.test"}, wantHost: "broker.test",
			wantDial: []string{"front-a.test:443"}, wantSNI: []string{""}, wantGrease: true, wantProto: "HTTP/1.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startTLSBroker(t, tt.http2, okHandler)
			h, err := NewHTTP(HTTPConfig{
				Broker:    mustURL(t, ParseBrokerURL, "https://broker.test/base/"),
				Fronts:    tt.fronts,
				Transport: b.transport(t, tt.imitate, tt.noSNI),
			})
			if err != nil {
				t.Fatal(err)
			}
			for range 4 { // several requests: random fronts, reused connections
				resp, err := h.Exchange(context.Background(), []byte("1.0\n{}"))
				if err != nil {
					t.Fatal(err)
				}
				if string(resp) != `{"answer":"x"}` {
					t.Fatalf("response %q", resp)
				}
				s := b.seen()
				if s.host != tt.wantHost {
					t.Errorf("Host header %q, want %q", s.host, tt.wantHost)
				}
				if !contains(tt.wantDial, s.dialed) {
					t.Errorf("dialed %q, want one of %q", s.dialed, tt.wantDial)
				}
				if !contains(tt.wantSNI, s.sni) {
					t.Errorf("SNI %q, want one of %q", s.sni, tt.wantSNI)
				}
				if s.grease != tt.wantGrease {
					t.Errorf("GREASE in ClientHello: %v, want %v", s.grease, tt.wantGrease)
				}
				if s.proto != tt.wantProto {
					t.Errorf("protocol %q, want %q", s.proto, tt.wantProto)
				}
				if s.path != "/base/client" || string(s.body) != "1.0\n{}" || s.ctype != contentType {
					t.Errorf("request path %q body %q content type %q", s.path, s.body, s.ctype)
				}
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// TestExchangeErrors checks the reply checks: status, size, transport
// errors and the exchange deadline.
func TestExchangeErrors(t *testing.T) {
	big := bytes.Repeat([]byte("a"), MaxResponseSize)
	tests := []struct {
		name    string
		handler func(release <-chan struct{}) http.HandlerFunc // release unblocks a hanging handler
		want    error                                          // nil: success
		timeout time.Duration                                  // HTTPConfig.Timeout; zero: a minute
	}{
		{name: "exactly the limit", handler: always(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(big) })},
		{name: "one byte over", handler: always(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(append(big, 'a')) }), want: ErrResponseTooLarge},
		{name: "503", handler: always(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }), want: ErrStatus},
		{name: "redirect not followed", handler: always(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "https://elsewhere.test/", http.StatusFound)
		}), want: ErrStatus},
		{name: "deadline", handler: func(release <-chan struct{}) http.HandlerFunc {
			return func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.ReadAll(r.Body)
				select {
				case <-r.Context().Done():
				case <-release:
				}
			}
		}, want: context.DeadlineExceeded, timeout: 300 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			release := make(chan struct{})
			srv := httptest.NewServer(tt.handler(release))
			defer srv.Close()
			defer close(release)
			rt, err := NewTransport(TransportConfig{})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.(interface{ CloseIdleConnections() }).CloseIdleConnections()
			h, err := NewHTTP(HTTPConfig{Broker: mustURL(t, ParseBrokerURL, srv.URL), Transport: rt, Timeout: cmp.Or(tt.timeout, time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			resp, err := h.Exchange(context.Background(), []byte("x"))
			if tt.want == nil {
				if err != nil || len(resp) != MaxResponseSize {
					t.Fatalf("Exchange = %d bytes, %v", len(resp), err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Exchange error %v, want %v", err, tt.want)
			}
		})
	}

	t.Run("connection refused", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		h, err := NewHTTP(HTTPConfig{Broker: mustURL(t, ParseBrokerURL, "http://"+addr+"/")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Exchange(context.Background(), nil); err == nil {
			t.Fatal("no error")
		}
	})

	t.Run("caller context", func(t *testing.T) {
		hold := make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.ReadAll(r.Body)
			select {
			case <-r.Context().Done():
			case <-hold:
			}
		}))
		defer srv.Close()
		defer close(hold)
		h, err := NewHTTP(HTTPConfig{Broker: mustURL(t, ParseBrokerURL, srv.URL)})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		go cancel()
		if _, err := h.Exchange(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("Exchange error %v, want context.Canceled", err)
		}
		h.transport.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	})
}

// always adapts a handler that never hangs to the table's shape.
func always(h http.HandlerFunc) func(<-chan struct{}) http.HandlerFunc {
	return func(<-chan struct{}) http.HandlerFunc { return h }
}

// mustURL returns parse(s) for a URL that must pass.
func mustURL(t testing.TB, parse func(string) (*url.URL, error), s string) *url.URL {
	t.Helper()
	u, err := parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestNewHTTPValidation(t *testing.T) {
	tests := []struct {
		url    string
		fronts []string
		want   error
	}{
		{url: "", want: ErrNoBrokerURL},
		{url: "broker.test", want: ErrBrokerURL},
		{url: "ftp://broker.test/", want: ErrBrokerURL},
		{url: "https://user:pw@broker.test/", want: ErrBrokerURL},
		{url: "https:///path", want: ErrBrokerURL},
		{url: "https://broker.test/", fronts: []string{"a b"}, want: ErrFront},
		{url: "https://broker.test/", fronts: []string{"a/b"}, want: ErrFront},
		{url: "https://broker.test/", fronts: []string{""}, want: ErrFront},
		{url: "https://broker.test/", fronts: []string{"cdn.test:"}, want: ErrFront},
		{url: "https://broker.test/", fronts: []string{"cdn.test", "cdn2.test:8443"}},
		{url: "http://127.0.0.1:8080/"},
	}
	for _, tt := range tests {
		t.Run(tt.url+strings.Join(tt.fronts, ","), func(t *testing.T) {
			u, err := ParseBrokerURL(tt.url)
			if err == nil {
				_, err = NewHTTP(HTTPConfig{Broker: u, Fronts: tt.fronts})
			}
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Fatalf("ParseBrokerURL and NewHTTP = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestUTLSNames(t *testing.T) {
	for name := range utlsNames {
		if err := CheckUTLSName(strings.ToUpper(name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := CheckUTLSName("hellonetscape_1"); !errors.Is(err, ErrUTLSName) {
		t.Errorf("unknown name: %v", err)
	}
	if _, err := NewTransport(TransportConfig{UTLSImitate: "nope"}); !errors.Is(err, ErrUTLSName) {
		t.Errorf("NewTransport with an unknown name: %v", err)
	}
}
