package rendezvous

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"
)

// fronted is what the HTTP and AMP methods share: domain fronting over a
// transport, a per-exchange timeout, checked, size-capped replies, and a
// connection opened ahead of the next exchange.
type fronted struct {
	fronts    []string
	transport http.RoundTripper
	timeout   time.Duration
	next      *nextFront
}

// nextFront is the front that the connection opened ahead went to, for
// the next exchange to use.
type nextFront struct {
	mu    sync.Mutex
	front string
}

// newFronted checks the fronts and fills in the defaults (a transport from
// NewTransport, DefaultTimeout).
func newFronted(fronts []string, transport http.RoundTripper, timeout time.Duration) (fronted, error) {
	f := fronted{fronts: make([]string, 0, len(fronts)), transport: transport, timeout: timeout, next: &nextFront{}}
	for _, front := range fronts {
		if err := checkFront(front); err != nil {
			return fronted{}, fmt.Errorf("front %q: %w", front, err)
		}
		f.fronts = append(f.fronts, front)
	}
	if f.transport == nil {
		t, err := NewTransport(TransportConfig{})
		if err != nil {
			return fronted{}, err
		}
		f.transport = t
	}
	if f.timeout <= 0 {
		f.timeout = DefaultTimeout
	}
	return f, nil
}

// warm opens, in the background, the connection that the next exchange to
// u (its scheme and host) will use: to a front picked now if there are
// fronts. It does nothing with a transport that cannot (one given with
// the Transport option).
func (f fronted) warm(u *url.URL) {
	wt, ok := f.transport.(warmTransport)
	if !ok {
		return
	}
	host := u.Host
	if len(f.fronts) > 0 {
		host = f.fronts[rand.IntN(len(f.fronts))]
		f.next.mu.Lock()
		f.next.front = host
		f.next.mu.Unlock()
	}
	wt.warm(u.Scheme, hostPort(host, defaultPort(u.Scheme)))
}

// pickFront returns the front warm picked, once, or else a random one.
func (f fronted) pickFront() string {
	f.next.mu.Lock()
	front := f.next.front
	f.next.front = ""
	f.next.mu.Unlock()
	if front != "" {
		return front
	}
	return f.fronts[rand.IntN(len(f.fronts))]
}

// defaultPort is the port of scheme (http or https).
func defaultPort(scheme string) string {
	if scheme == "http" {
		return "80"
	}
	return "443"
}

// roundTrip sends req, through a random front if there are any: the
// connection (and so the TLS SNI) goes to the front, while the Host header,
// inside TLS, names the real host. A reply other than 200 is an error.
func (f fronted) roundTrip(req *http.Request) (*http.Response, error) {
	if len(f.fronts) > 0 {
		req.Host = req.URL.Host
		req.URL.Host = f.pickFront()
	}
	resp, err := f.transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if wt, ok := f.transport.(warmTransport); ok {
		wt.answeredBy(hostPort(req.URL.Host, defaultPort(req.URL.Scheme)))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %d", ErrStatus, resp.StatusCode)
	}
	return resp, nil
}

// readBody reads at most MaxResponseSize bytes of a reply and closes it.
func readBody(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseSize+1))
	if err != nil {
		return nil, err
	}
	if len(body) > MaxResponseSize {
		return nil, ErrResponseTooLarge
	}
	return body, nil
}
