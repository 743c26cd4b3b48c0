package loadgen

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// checkHost returns nil if host (an IP literal, possibly in brackets, or a
// name) is a loopback address or the name localhost, or if allow is set.
func checkHost(host string, allow bool) error {
	if allow {
		return nil
	}
	h := strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return nil
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Unmap().IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w: %q", ErrNotLoopback, host)
}

// checkHostPort checks the host of a host:port address.
func checkHostPort(addr string, allow bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("%w: address %q is not host:port", ErrInvalidConfig, addr)
	}
	return checkHost(host, allow)
}

// parseURL parses raw, requires one of schemes and checks its host.
func parseURL(raw string, allow bool, schemes ...string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	ok := false
	for _, s := range schemes {
		ok = ok || u.Scheme == s
	}
	if !ok || u.Host == "" {
		return nil, fmt.Errorf("%w: URL %q: want %s://host[:port]/path", ErrInvalidConfig, raw, strings.Join(schemes, "|"))
	}
	if err := checkHost(u.Hostname(), allow); err != nil {
		return nil, err
	}
	return u, nil
}

// newDialer returns a dialer that, unless allow is set, refuses to connect
// to anything but a loopback address, checked on the resolved address so
// that a name cannot lead elsewhere.
func newDialer(allow bool) *net.Dialer {
	d := &net.Dialer{Timeout: 10 * time.Second}
	if !allow {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !ap.Addr().Unmap().IsLoopback() {
				return fmt.Errorf("%w: %q", ErrNotLoopback, address)
			}
			return nil
		}
	}
	return d
}
