package rendezvous

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/flurrypt/flurry/common/amp"
)

// ampContentType is the AMP cache serving type of the broker's pages
// ("c": a document).
const ampContentType = "c"

// AMPConfig configures an AMP cache rendezvous. Broker and Cache are
// required.
type AMPConfig struct {
	// Broker is the broker's base URL, from ParseBrokerURL, on its
	// scheme's default port (an AMP cache cannot name another); requests
	// go to Broker resolved against "amp/client/<encoded request>",
	// through the cache.
	Broker *url.URL

	// Cache is the AMP cache (the ampcache bridge-line option), from
	// ParseCacheURL, e.g. https://cdn.ampproject.org/.
	Cache *url.URL

	// Fronts are front domains (host or host:port). When not empty, each
	// request goes to a random one of them, with the cache's host for the
	// broker in the Host header.
	Fronts []string

	// Transport sends the requests; nil means a transport from
	// NewTransport(TransportConfig{}).
	Transport http.RoundTripper

	// Timeout bounds each exchange, from the request to the last byte of
	// the reply; zero means DefaultTimeout.
	Timeout time.Duration
}

// AMP is Snowflake's AMP cache rendezvous: the poll request goes in the
// path of a GET that an AMP cache forwards to the broker, and the reply
// comes back as an AMP page (see package amp). It is safe for concurrent
// use.
type AMP struct {
	broker *url.URL
	cache  *url.URL
	fronted
}

// NewAMP checks cfg and returns an AMP cache rendezvous.
func NewAMP(cfg AMPConfig) (*AMP, error) {
	broker, cache := cfg.Broker, cfg.Cache
	if broker == nil {
		return nil, ErrNoBrokerURL
	}
	if cache == nil {
		return nil, ErrNoCacheURL
	}
	// Fail now, not at every exchange, if the cache cannot serve the
	// broker (a port other than the scheme's default).
	if _, err := amp.CacheURL(broker.ResolveReference(&url.URL{Path: "amp/client/0"}), cache, ampContentType); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBrokerURL, err)
	}
	f, err := newFronted(cfg.Fronts, cfg.Transport, cfg.Timeout)
	if err != nil {
		return nil, err
	}
	return &AMP{broker: broker, cache: cache, fronted: f}, nil
}

// ParseCacheURL parses and checks an AMP cache URL: absolute, http or
// https, with a host, and without user information, query or fragment.
func ParseCacheURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, ErrNoCacheURL
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCacheURL, err)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%w: scheme must be http or https", ErrCacheURL)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%w: no host", ErrCacheURL)
	case u.User != nil:
		return nil, fmt.Errorf("%w: user information not allowed", ErrCacheURL)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("%w: query or fragment not allowed", ErrCacheURL)
	}
	return u, nil
}

// Warm opens, in the background, the connection the next Exchange will
// use, as HTTP.Warm does.
func (a *AMP) Warm() {
	u, err := amp.CacheURL(a.broker.ResolveReference(&url.URL{Path: "amp/client/0"}), a.cache, ampContentType)
	if err != nil {
		return // NewAMP checked that it cannot fail
	}
	a.warm(u)
}

// Exchange sends one poll request through the AMP cache and returns the
// broker's reply.
//
// The reply must be a 200 page without a Location header (Google's cache
// answers some requests with a "silent redirect" to the origin: status 200,
// a Location header and a script; following it would bypass the cache) of
// at most MaxResponseSize bytes, holding valid armor.
func (a *AMP) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()

	pub := a.broker.ResolveReference(&url.URL{Path: "amp/client/" + amp.EncodePath(request)})
	u, err := amp.CacheURL(pub, a.cache, ampContentType)
	if err != nil {
		return nil, fmt.Errorf("AMP cache URL: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build AMP cache request: %w", err)
	}
	// As for HTTP, with fronts the Host header names the cache's host.
	resp, err := a.roundTrip(req)
	if err != nil {
		// A cache turns a broker's 5xx into 404 and invalid AMP into a
		// redirect around the cache.
		return nil, fmt.Errorf("AMP cache request: %w", err)
	}
	if _, ok := resp.Header["Location"]; ok {
		resp.Body.Close()
		return nil, ErrRedirect
	}
	page, err := readBody(resp)
	if err != nil {
		return nil, fmt.Errorf("read AMP cache response: %w", err)
	}
	dec, err := amp.NewArmorDecoder(bytes.NewReader(page))
	if err != nil {
		return nil, fmt.Errorf("AMP cache response: %w", err)
	}
	body, err := io.ReadAll(dec)
	if err != nil {
		return nil, fmt.Errorf("AMP cache response: %w", err)
	}
	return body, nil
}
