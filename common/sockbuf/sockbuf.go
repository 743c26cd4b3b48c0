// Package sockbuf gives the UDP sockets that pion opens large kernel
// buffers.
//
// A WebRTC peer that receives a bulk transfer gets its SCTP packets in
// bursts of up to the receive window (pion's 1 MiB by default). The kernel's
// default socket receive buffer (about 208 KiB on Linux) overflows when the
// reading goroutine is late by a few milliseconds on a loaded machine; each
// such drop costs SCTP a retransmission timeout, which is at least one
// second in pion. Net wraps a transport.Net so that every UDP socket it
// opens asks for Size bytes each way. The kernel caps the request at
// net.core.rmem_max and wmem_max; Size is then all that can be had without
// privileges, and the figures in docs/performance.md say what it buys.
//
// The sockets of ICE candidates (ListenUDP) also get batched I/O, UDP GSO
// and GRO where the kernel has them (package udpbatch): pion sends and
// receives one datagram per system call otherwise.
package sockbuf

import (
	"net"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"

	"github.com/flurrypt/flurry/common/udpbatch"
)

// Size is the receive and send buffer asked for on each UDP socket:
// enough for pion's whole SCTP receive window with the kernel's
// per-datagram overhead.
const Size = 4 << 20

// Net returns n (the host's network if nil) with every UDP socket it opens
// given Size-byte buffers where the socket allows it. The sockets of its
// candidates share one udpbatch.Buffers: build the Net once for all of a
// role's peer connections.
func Net(n transport.Net) (transport.Net, error) {
	if n == nil {
		std, err := stdnet.NewNet()
		if err != nil {
			return nil, err
		}
		n = hostNet{std}
	}
	return bufferedNet{Net: n, bufs: udpbatch.NewBuffers()}, nil
}

// hostNet is the host's network with a fresh list of interfaces on every
// query, as pion has when it makes a stdnet.Net per connection: a
// long-running proxy or client must see addresses that appear later.
// stdnet.Net's other methods keep no state.
type hostNet struct{ *stdnet.Net }

func (hostNet) Interfaces() ([]*transport.Interface, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return n.Interfaces()
}

func (hostNet) InterfaceByIndex(index int) (*transport.Interface, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return n.InterfaceByIndex(index)
}

func (hostNet) InterfaceByName(name string) (*transport.Interface, error) {
	n, err := stdnet.NewNet()
	if err != nil {
		return nil, err
	}
	return n.InterfaceByName(name)
}

// bufferedNet is a transport.Net whose UDP sockets get larger buffers.
type bufferedNet struct {
	transport.Net
	bufs *udpbatch.Buffers // the batched sockets' pooled buffers
}

// bufferSetter is what *net.UDPConn offers to size its buffers.
type bufferSetter interface {
	SetReadBuffer(bytes int) error
	SetWriteBuffer(bytes int) error
}

// enlarge sizes c's buffers if it can; failure only leaves the defaults.
func enlarge(c any) {
	if s, ok := c.(bufferSetter); ok {
		_ = s.SetReadBuffer(Size)
		_ = s.SetWriteBuffer(Size)
	}
}

func (b bufferedNet) ListenPacket(network, address string) (net.PacketConn, error) {
	c, err := b.Net.ListenPacket(network, address)
	if err == nil {
		enlarge(c)
	}
	return c, err
}

// ListenUDP opens the sockets of pion's host and server-reflexive
// candidates, which carry the data path: they also get batched I/O. Its
// mDNS sockets (bound to a multicast group; the roles turn mDNS off) are
// left alone: pion reads them through x/net's control-message path, which
// would bypass the batches.
func (b bufferedNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := b.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	enlarge(c)
	if uc, ok := c.(*net.UDPConn); ok && (laddr == nil || !laddr.IP.IsMulticast()) {
		return udpbatch.Wrap(uc, b.bufs), nil
	}
	return c, nil
}

func (b bufferedNet) DialUDP(network string, laddr, raddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := b.Net.DialUDP(network, laddr, raddr)
	if err == nil {
		enlarge(c)
	}
	return c, err
}
