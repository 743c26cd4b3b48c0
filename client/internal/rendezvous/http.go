package rendezvous

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// MaxResponseSize is the longest broker reply Exchange accepts, in bytes
// (Snowflake's client reads at most 100 000 bytes).
const MaxResponseSize = 100000

// DefaultTimeout bounds one exchange when HTTPConfig.Timeout is zero: the
// broker's 5 s budget to find a proxy plus time for TLS, the CDN and the
// network (Snowflake's broker transport allows 15 s for the headers).
const DefaultTimeout = 15 * time.Second

// contentType is what Snowflake's client sends with a poll request.
const contentType = "application/x-www-form-urlencoded"

// HTTPConfig configures an HTTP rendezvous. The zero value is not usable:
// Broker is required.
type HTTPConfig struct {
	// Broker is the broker's base URL, from ParseBrokerURL; requests go
	// to Broker resolved against "client".
	Broker *url.URL

	// Fronts are front domains (host or host:port). When not empty, each
	// request goes to a random one of them, with BrokerURL's host in the
	// Host header.
	Fronts []string

	// Transport sends the requests; nil means a transport from
	// NewTransport(TransportConfig{}).
	Transport http.RoundTripper

	// Timeout bounds each exchange, from the request to the last byte of
	// the reply; zero means DefaultTimeout.
	Timeout time.Duration
}

// HTTP is the HTTPS rendezvous method with optional domain fronting.
// It is safe for concurrent use.
type HTTP struct {
	endpoint *url.URL // Broker resolved against "client"
	fronted
}

// NewHTTP checks cfg and returns an HTTP rendezvous.
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	if cfg.Broker == nil {
		return nil, ErrNoBrokerURL
	}
	f, err := newFronted(cfg.Fronts, cfg.Transport, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &HTTP{endpoint: cfg.Broker.ResolveReference(&url.URL{Path: "client"}), fronted: f}, nil
}

// ParseBrokerURL parses and checks a broker URL: absolute, http or https,
// with a host and no user information.
func ParseBrokerURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, ErrNoBrokerURL
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBrokerURL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w: scheme must be http or https", ErrBrokerURL)
	}
	if u.Host == "" || u.Hostname() == "" {
		return nil, fmt.Errorf("%w: no host", ErrBrokerURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: user information not allowed", ErrBrokerURL)
	}
	return u, nil
}

// checkFront accepts a host name or IP address, optionally with a port.
func checkFront(front string) error {
	host := front
	if h, port, err := net.SplitHostPort(front); err == nil {
		if port == "" {
			return fmt.Errorf("%w: empty port", ErrFront)
		}
		host = h
	}
	if host == "" || len(host) > 253 {
		return fmt.Errorf("%w: bad length", ErrFront)
	}
	if strings.ContainsAny(host, "/?#@ []\\") {
		return fmt.Errorf("%w: forbidden character", ErrFront)
	}
	for _, r := range host {
		if r < 0x21 || r > 0x7e {
			return fmt.Errorf("%w: not printable ASCII", ErrFront)
		}
	}
	return nil
}

// Warm opens, in the background, the connection the next Exchange will
// use (TCP, and TLS through uTLS), unless the broker or front answered
// within the last 30 s (its connection is then likely still open). The
// client calls it while it gathers the offer's candidates, so that the
// exchange skips the connection's round trips.
func (h *HTTP) Warm() { h.warm(h.endpoint) }

// Exchange sends one poll request to the broker and returns its reply.
func (h *HTTP) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()

	u := *h.endpoint
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(request))
	if err != nil {
		return nil, fmt.Errorf("build broker request: %w", err)
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := h.roundTrip(req)
	if err != nil {
		return nil, fmt.Errorf("broker request: %w", err)
	}
	body, err := readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("read broker response: %w", err)
	}
	return body, nil
}
