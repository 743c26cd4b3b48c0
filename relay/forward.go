package relay

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
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

// ForTor returns cfg set up to run as tor's managed server transport:
// every stream goes to tor (TorDialer with info, and cfg.Transport as the
// ExtORPort TRANSPORT name; ForwardAddr is cleared), and tor's options for
// the transport (ServerTransportOptions in torrc) override the command
// line's: num-turbotunnel overrides cfg.NumTurbotunnel, orport-srcaddr
// overrides srcAddr (empty: none; see TorConfig.SourcePrefix). Backends are
// refused: under tor the relay forwards to that tor.
func ForTor(cfg Config, info *pt.ServerInfo, options pt.Args, srcAddr string) (Config, error) {
	if len(cfg.Backends) > 0 {
		return cfg, fmt.Errorf("%w: backends are for standalone mode; under tor the relay forwards to that tor", ErrInvalidConfig)
	}
	tor := TorConfig{Info: info, Transport: cfg.Transport}
	if v, ok := options.Get("orport-srcaddr"); ok {
		srcAddr = v
	}
	if srcAddr != "" {
		p, err := ParseSourcePrefix(srcAddr)
		if err != nil {
			return cfg, fmt.Errorf("orport-srcaddr: %w", err)
		}
		tor.SourcePrefix = p
	}
	if v, ok := options.Get("num-turbotunnel"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return cfg, fmt.Errorf("%w: num-turbotunnel %q is not a positive integer", ErrInvalidConfig, v)
		}
		cfg.NumTurbotunnel = n
	}
	cfg.Dial = TorDialer(tor)
	cfg.ForwardAddr = ""
	return cfg, nil
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
