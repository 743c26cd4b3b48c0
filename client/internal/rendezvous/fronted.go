package rendezvous

import (
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"time"
)

// fronted is what the HTTP and AMP methods share: domain fronting over a
// transport, a per-exchange timeout, and checked, size-capped replies.
type fronted struct {
	fronts    []string
	transport http.RoundTripper
	timeout   time.Duration
}

// newFronted checks the fronts and fills in the defaults (a transport from
// NewTransport, DefaultTimeout).
func newFronted(fronts []string, transport http.RoundTripper, timeout time.Duration) (fronted, error) {
	f := fronted{fronts: make([]string, 0, len(fronts)), transport: transport, timeout: timeout}
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

// roundTrip sends req, through a random front if there are any: the
// connection (and so the TLS SNI) goes to the front, while the Host header,
// inside TLS, names the real host. A reply other than 200 is an error.
func (f fronted) roundTrip(req *http.Request) (*http.Response, error) {
	if len(f.fronts) > 0 {
		req.Host = req.URL.Host
		req.URL.Host = f.fronts[rand.IntN(len(f.fronts))]
	}
	resp, err := f.transport.RoundTrip(req)
	if err != nil {
		return nil, err
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
