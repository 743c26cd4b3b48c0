package measure

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// CheckHost returns nil if host (an IP literal, possibly in brackets, or a
// Name) is a loopback address or the name localhost, or if allow is set.
func CheckHost(host string, allow bool) error {
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

// CheckHostPort checks the host of a host:port address.
func CheckHostPort(addr string, allow bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return fmt.Errorf("%w: address %q is not host:port", ErrInvalidConfig, addr)
	}
	return CheckHost(host, allow)
}

// ParseURL parses raw, requires one of schemes and checks its host.
func ParseURL(raw string, allow bool, schemes ...string) (*url.URL, error) {
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
	if err := CheckHost(u.Hostname(), allow); err != nil {
		return nil, err
	}
	return u, nil
}

// NewDialer returns a dialer that, unless allow is set, refuses to connect
// to anything but a loopback address, checked on the resolved address so
// that a name cannot lead elsewhere.
func NewDialer(allow bool) *net.Dialer {
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
