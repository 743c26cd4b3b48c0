package proxy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"sync"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/relaypattern"
)

// relayPolicy decides which relays the proxy may connect to.
type relayPolicy struct {
	pattern      relaypattern.Pattern
	ports        portSet
	allowNonTLS  bool
	allowPrivate bool
	resolver     Resolver
}

func (s *settings) policy() relayPolicy {
	r := s.Resolver
	if r == nil {
		r = net.DefaultResolver // read-only use; never modified
	}
	return relayPolicy{
		pattern:      s.pattern,
		ports:        s.relayPorts,
		allowNonTLS:  s.AllowNonTLSRelay,
		allowPrivate: s.AllowPrivateRelay,
		resolver:     r,
	}
}

// checkURL applies the checks that need no network: the URL parses and has
// a host, a literal IP is public (unless private relays are allowed), the
// scheme is wss (or ws when allowed), and the hostname and port match the
// pattern.
// The order follows Snowflake's checkIsRelayURLAcceptable.
func (r relayPolicy) checkURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRelayURL, err)
	}
	if err := r.checkParsedURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// checkParsedURL is checkURL for a parsed URL.
func (r relayPolicy) checkParsedURL(u *url.URL) error {
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil && !r.allowPrivate && notGlobal(ip) {
		return ErrRelayPrivate
	}
	switch u.Scheme {
	case "wss":
	case "ws":
		if !r.allowNonTLS {
			return fmt.Errorf("%w: ws:// needs the non-TLS relay option", ErrRelayScheme)
		}
	default:
		return ErrRelayScheme
	}
	if host == "" || u.Opaque != "" {
		return ErrRelayURL
	}
	if !r.pattern.Match(host) {
		return ErrRelayHostname
	}
	port := defaultPort(u.Scheme)
	if p := u.Port(); p != "" {
		n, err := strconv.ParseUint(p, 10, 16)
		if err != nil || n == 0 {
			return ErrRelayURL
		}
		port = uint16(n)
	}
	if !r.ports.allows(port, defaultPort(u.Scheme)) {
		return ErrRelayPort
	}
	return nil
}

// resolve returns the addresses of host, all of which passed the private
// address check. A literal IP is returned as is.
func (r relayPolicy) resolve(ctx context.Context, host string) ([]netip.Addr, error) {
	if ip, err := netip.ParseAddr(host); err == nil {
		if !r.allowPrivate && notGlobal(ip) {
			return nil, ErrRelayPrivate
		}
		return []netip.Addr{ip}, nil
	}
	addrs, err := r.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRelayResolve, err)
	}
	if len(addrs) == 0 {
		return nil, ErrRelayResolve
	}
	if !r.allowPrivate {
		for _, a := range addrs {
			// One private address is enough to refuse: a name that mixes
			// public and private records is not a relay we trust.
			if notGlobal(a) {
				return nil, ErrRelayPrivate
			}
		}
	}
	return addrs, nil
}

// check applies checkURL and resolves the host.
func (r relayPolicy) check(ctx context.Context, raw string) (*url.URL, error) {
	u, err := r.checkURL(raw)
	if err != nil {
		return nil, err
	}
	if _, err := r.resolve(ctx, u.Hostname()); err != nil {
		return nil, err
	}
	return u, nil
}

// relayDialer connects to relays, re-checking the addresses it dials.
type relayDialer struct {
	policy  relayPolicy
	netDial func(ctx context.Context, network, addr string) (net.Conn, error)
	ws      websocket.Dialer
}

// wsBufferPool lets idle WebSocket connections hold no write buffer.
type wsBufferPool struct{ pool sync.Pool }

func (p *wsBufferPool) Get() any  { return p.pool.Get() }
func (p *wsBufferPool) Put(v any) { p.pool.Put(v) }

func newRelayDialer(s *settings) *relayDialer {
	d := &relayDialer{policy: s.policy(), netDial: s.RelayDialContext}
	if d.netDial == nil {
		var nd net.Dialer
		d.netDial = nd.DialContext
	}
	d.ws = websocket.Dialer{
		NetDialContext:   d.dialChecked,
		Proxy:            nil, // the checked address is dialled directly
		TLSClientConfig:  s.RelayTLSConfig,
		HandshakeTimeout: s.RelayDialTimeout,
		ReadBufferSize:   relayReadBufferSize,
		WriteBufferSize:  copyBufferSize,
		WriteBufferPool:  &wsBufferPool{},
	}
	return d
}

// dialChecked resolves addr's host, refuses private addresses (unless
// allowed), and connects to the first address that answers.
func (d *relayDialer) dialChecked(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRelayURL, err)
	}
	addrs, err := d.policy.resolve(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := d.netDial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

// dial checks rawURL, adds client_ip when known, and opens the WebSocket.
func (d *relayDialer) dial(ctx context.Context, rawURL string, clientIP netip.Addr) (*websocket.Conn, error) {
	u, err := d.policy.checkURL(rawURL)
	if err != nil {
		return nil, err
	}
	if clientIP.IsValid() {
		q := u.Query()
		q.Set("client_ip", clientIP.String())
		u.RawQuery = q.Encode()
	}
	ws, resp, err := d.ws.DialContext(ctx, u.String(), http.Header{})
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial relay: %w", err)
	}
	return ws, nil
}
