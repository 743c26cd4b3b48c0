package pacing

import (
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5"
)

const (
	// Burst is how far ahead of its rate a Pacer lets datagrams go
	// without waiting: a few milliseconds' worth leaves in one burst,
	// which any bottleneck's queue holds, and the sender sleeps (and pion
	// batches its datagrams) a few hundred times a second, not thousands.
	Burst = 4 * time.Millisecond
	// CatchUp is how late a busy Pacer may fall behind its schedule and
	// still catch up, its datagrams leaving back to back until it is on
	// time: a sender woken late (a loaded machine's scheduler) would
	// otherwise send below the rate it set, and a delivery rate measured
	// from what it sent would drag the rate down with it. Behind by more,
	// the Pacer was idle, and grants one Burst.
	CatchUp = 20 * time.Millisecond
	// MaxRate, in bytes per second, is the rate from which a Pacer paces
	// nothing: a Burst there is larger than what pacing would save, and
	// waking the sender so often costs CPU.
	MaxRate = 25e6
	// MinRate, in bytes per second, is the slowest pace: slower rates are
	// raised to it, so that a datagram never waits long.
	MinRate = 16e3
)

// Registry holds the Pacers of destinations; the sockets of its Net pace
// what they send to them. Safe for concurrent use.
type Registry struct {
	active atomic.Int64 // registered Pacers: none means nothing to look up
	mu     sync.RWMutex
	pacers map[netip.AddrPort]*Pacer
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{pacers: make(map[netip.AddrPort]*Pacer)}
}

// Pace registers a Pacer for datagrams to dst, pacing nothing until its
// rate is set, and returns it; Close removes it. A Pacer registered for
// dst before is replaced.
func (r *Registry) Pace(dst netip.AddrPort) *Pacer {
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	p := &Pacer{r: r, dst: dst, done: make(chan struct{})}
	r.mu.Lock()
	if _, ok := r.pacers[dst]; !ok {
		r.active.Add(1)
	}
	r.pacers[dst] = p
	r.mu.Unlock()
	return p
}

// lookup returns the Pacer of dst, or nil.
func (r *Registry) lookup(dst netip.AddrPort) *Pacer {
	if r.active.Load() == 0 {
		return nil
	}
	dst = netip.AddrPortFrom(dst.Addr().Unmap(), dst.Port())
	r.mu.RLock()
	p := r.pacers[dst]
	r.mu.RUnlock()
	return p
}

// wait holds a datagram of n bytes to dst until its turn.
func (r *Registry) wait(dst netip.AddrPort, n int) {
	if p := r.lookup(dst); p != nil {
		p.wait(n)
	}
}

// waitAddr is wait for a net.Addr; addresses other than UDP's are not
// paced.
func (r *Registry) waitAddr(addr net.Addr, n int) {
	if r.active.Load() == 0 {
		return
	}
	if ua, ok := addr.(*net.UDPAddr); ok {
		r.wait(ua.AddrPort(), n)
	}
}

// Pacer spaces the datagrams to one destination. Safe for concurrent use.
type Pacer struct {
	r   *Registry
	dst netip.AddrPort

	done chan struct{} // closed by Close: datagrams waiting leave at once

	mu   sync.Mutex
	rate float64   // bytes per second; 0: no pacing
	next time.Time // when the next datagram may leave
}

// SetRate sets the pace in bytes per second; zero, or MaxRate and above,
// paces nothing.
func (p *Pacer) SetRate(bytesPerSecond float64) {
	switch {
	case bytesPerSecond <= 0 || bytesPerSecond >= MaxRate:
		bytesPerSecond = 0
	case bytesPerSecond < MinRate:
		bytesPerSecond = MinRate
	}
	p.mu.Lock()
	p.rate = bytesPerSecond
	p.mu.Unlock()
}

// Next returns when a datagram sent at now would leave: now, or later
// while the Pacer holds earlier ones.
func (p *Pacer) Next(now time.Time) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 || !p.next.After(now.Add(Burst)) {
		return now
	}
	return p.next.Add(-Burst)
}

// Held returns about how many bytes the Pacer holds back at now: those
// its rate has not let out yet.
func (p *Pacer) Held(now time.Time) uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.rate == 0 {
		return 0
	}
	d := p.next.Sub(now) - Burst
	if d <= 0 {
		return 0
	}
	return uint64(d.Seconds() * p.rate)
}

// Close removes the Pacer from its Registry; datagrams to its destination
// are no longer paced, and those waiting leave at once. Idempotent.
func (p *Pacer) Close() {
	p.r.mu.Lock()
	if p.r.pacers[p.dst] == p {
		delete(p.r.pacers, p.dst)
		p.r.active.Add(-1)
	}
	p.r.mu.Unlock()
	p.mu.Lock()
	select {
	case <-p.done:
	default:
		close(p.done)
	}
	p.mu.Unlock()
}

// wait takes a turn for n bytes and sleeps until it comes, unless it is
// within Burst.
func (p *Pacer) wait(n int) {
	p.mu.Lock()
	if p.rate == 0 {
		p.mu.Unlock()
		return
	}
	now := time.Now()
	start := p.next
	if idle := now.Add(-Burst); start.Before(idle) && now.Sub(start) > CatchUp {
		start = idle // an idle pacer grants one burst, no more
	}
	p.next = start.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	p.mu.Unlock()
	if d := start.Sub(now); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-p.done:
			t.Stop()
		}
	}
}

// Net returns n with every UDP socket that ListenUDP opens pacing what it
// sends to the destinations of r's Pacers.
func (r *Registry) Net(n transport.Net) transport.Net { return pacedNet{n, r} }

type pacedNet struct {
	transport.Net
	r *Registry
}

func (n pacedNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	pc := pacedConn{c, n.r}
	if ap, ok := c.(addrPortReaderWriter); ok {
		return pacedAddrPortConn{pc, ap}, nil
	}
	return pc, nil
}

// PacketConn returns c with what it sends to the destinations of r's
// Pacers paced, for a socket handed to pion directly (a UDPMux's) rather
// than opened through Net.
func (r *Registry) PacketConn(c net.PacketConn) net.PacketConn { return pacedPacketConn{c, r} }

type pacedPacketConn struct {
	net.PacketConn
	r *Registry
}

func (c pacedPacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.r.waitAddr(addr, len(p))
	return c.PacketConn.WriteTo(p, addr)
}

// pacedConn paces the writes of a UDP socket.
type pacedConn struct {
	transport.UDPConn
	r *Registry
}

func (c pacedConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.r.waitAddr(addr, len(p))
	return c.UDPConn.WriteTo(p, addr)
}

func (c pacedConn) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	c.r.waitAddr(addr, len(p))
	return c.UDPConn.WriteToUDP(p, addr)
}

func (c pacedConn) Write(p []byte) (int, error) {
	c.r.waitAddr(c.UDPConn.RemoteAddr(), len(p))
	return c.UDPConn.Write(p)
}

func (c pacedConn) WriteMsgUDP(p, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if addr != nil {
		c.r.waitAddr(addr, len(p))
	} else {
		c.r.waitAddr(c.UDPConn.RemoteAddr(), len(p))
	}
	return c.UDPConn.WriteMsgUDP(p, oob, addr)
}

// addrPortReaderWriter is pion/ice's optional allocation-free interface of
// a socket (ice.AddrPortReaderWriter), kept when the socket has it.
type addrPortReaderWriter interface {
	ReadFromAddrPort(b []byte) (int, netip.AddrPort, error)
	WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error)
}

type pacedAddrPortConn struct {
	pacedConn
	ap addrPortReaderWriter
}

func (c pacedAddrPortConn) ReadFromAddrPort(b []byte) (int, netip.AddrPort, error) {
	return c.ap.ReadFromAddrPort(b)
}

func (c pacedAddrPortConn) WriteToAddrPort(b []byte, addr netip.AddrPort) (int, error) {
	c.r.wait(addr, len(b))
	return c.ap.WriteToAddrPort(b, addr)
}
