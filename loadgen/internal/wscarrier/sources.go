package wscarrier

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// DefaultSourcePrefix is where idle carriers take their source addresses
// from when the relay is on IPv4 loopback: one address has only about
// 28 000 ephemeral ports towards one relay address, 127.0.0.0/8 has
// millions.
var DefaultSourcePrefix = netip.MustParsePrefix("127.0.0.0/8")

// SourceAddrs hands out the addresses of a prefix in turn, skipping its
// first (network) address.
type SourceAddrs struct {
	base netip.Addr
	size uint32 // usable addresses
	n    atomic.Uint32
}

// NewSourceAddrs hands out p's addresses; p must be IPv4 and hold at
// least two.
func NewSourceAddrs(p netip.Prefix) (*SourceAddrs, error) {
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("%w: source prefix %s: want an IPv4 prefix of /30 or wider", measure.ErrInvalidConfig, p)
	}
	return &SourceAddrs{base: p.Addr(), size: uint32(1)<<(32-p.Bits()) - 2}, nil
}

// next returns the next source address, port 0.
func (s *SourceAddrs) next() *net.TCPAddr {
	i := s.n.Add(1)%s.size + 1
	b := s.base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += i
	return &net.TCPAddr{IP: net.IPv4(byte(v>>24), byte(v>>16), byte(v>>8), byte(v))}
}

// dialFrom returns a DialContext that binds each connection to the next
// source address of s (nil s: the system's choice).
func dialFrom(d *net.Dialer, s *SourceAddrs) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if s == nil {
		return d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		dd := *d
		dd.LocalAddr = s.next()
		return dd.DialContext(ctx, network, addr)
	}
}
