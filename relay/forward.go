package relay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"syscall"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
)

// TCPDialer returns a DialFunc that connects every stream to addr over TCP
// (standalone mode). The client address is not passed on.
func TCPDialer(addr string) DialFunc {
	return func(ctx context.Context, _ netip.Addr) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	}
}

// TorConfig says how to reach tor when the relay runs as its managed
// pluggable transport.
type TorConfig struct {
	// Info comes from pt.ServerSetup: the ORPort and, when tor has one, the
	// ExtORPort and its auth cookie.
	Info *pt.ServerInfo
	// Transport is the name sent in the ExtORPort TRANSPORT command.
	// Default "snowflake".
	Transport string
	// SourcePrefix, if valid, makes each ORPort connection come from a
	// random address in it (Snowflake's orport-srcaddr option), so that
	// many clients do not exhaust the source ports of one address.
	SourcePrefix netip.Prefix
}

// TorDialer returns a DialFunc that connects each stream to tor: to the
// ExtORPort (authenticating, then sending USERADDR with the client's IP when
// known, and TRANSPORT) if tor offers one, else to the plain ORPort.
func TorDialer(cfg TorConfig) DialFunc {
	if cfg.Transport == "" {
		cfg.Transport = "snowflake"
	}
	info := *cfg.Info
	return func(ctx context.Context, client netip.Addr) (net.Conn, error) {
		var d net.Dialer
		if deadline, ok := ctx.Deadline(); ok {
			d.Timeout = time.Until(deadline)
		}
		if cfg.SourcePrefix.IsValid() {
			d.LocalAddr = &net.TCPAddr{IP: randomAddr(cfg.SourcePrefix).AsSlice()}
			d.Control = bindAddressNoPort
		}
		var userAddr string
		if client.IsValid() {
			// Tor parses USERADDR as addr:port; the port is a stub, as
			// in Snowflake.
			userAddr = netip.AddrPortFrom(client, 1).String()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		conn, err := pt.DialOrWithDialer(&d, &info, userAddr, cfg.Transport)
		if err != nil {
			return nil, fmt.Errorf("dial tor: %w", err)
		}
		return conn, nil
	}
}

// randomAddr returns a uniformly random address inside p.
func randomAddr(p netip.Prefix) netip.Addr {
	p = p.Masked()
	b := p.Addr().AsSlice()
	for i := range b {
		// Bits of byte i that belong to the host part.
		var hostMask byte
		switch bitStart := i * 8; {
		case bitStart >= p.Bits():
			hostMask = 0xff
		case bitStart+8 > p.Bits():
			hostMask = 0xff >> (p.Bits() - bitStart)
		}
		b[i] |= byte(rand.Uint32()) & hostMask
	}
	a, _ := netip.AddrFromSlice(b)
	if p.Addr().Is4() {
		a = a.Unmap()
	}
	return a
}

// ParseSourcePrefix parses an orport-srcaddr value: an IP address (meaning
// exactly that address) or a CIDR prefix.
func ParseSourcePrefix(s string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(s); err == nil {
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%w: %q is neither an IP address nor a CIDR prefix", ErrInvalidConfig, s)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// bindAddressNoPort is a net.Dialer Control function; see the per-OS files.
var _ func(network, address string, c syscall.RawConn) error = bindAddressNoPort
