// Package lossyudp puts a path model between a UDP socket and its peers:
// one-way delay, random loss and, optionally, a rate-limited bottleneck
// with a drop-tail queue, in each direction. A test wraps one end's
// socket (the proxy's, say) and every datagram that end sends or
// receives crosses the modelled path, so that WebRTC on loopback behaves
// as it would over a long or lossy link.
//
// It is for tests and benchmarks only: it copies every datagram and keeps
// a goroutine per direction. Everything stays on the wrapped socket's
// loopback addresses.
package lossyudp

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Link models one direction of a path.
type Link struct {
	// Delay is the one-way propagation delay.
	Delay time.Duration
	// Loss is the probability that a datagram is lost, from 0 to 1.
	Loss float64
	// Rate, if not zero, is the bottleneck's rate in bytes per second:
	// datagrams wait their turn in a queue of at most Queue bytes and
	// are dropped when it is full.
	Rate int64
	// Queue is the bottleneck queue in bytes; zero means 50 ms at Rate.
	Queue int
}

// Stats counts datagrams in one direction.
type Stats struct {
	Sent       uint64 // offered to the link
	Lost       uint64 // dropped at random (Loss)
	Overflowed uint64 // dropped because the bottleneck queue was full
}

// maxPackets bounds the datagrams in flight in one direction.
const maxPackets = 1 << 16

type packet struct {
	b    []byte
	addr net.Addr
	due  time.Time
}

type link struct {
	cfg       Link
	mu        sync.Mutex
	rng       *rand.Rand
	busyUntil time.Time // when the bottleneck has sent what it holds
	q         chan packet
	sent      atomic.Uint64
	lost      atomic.Uint64
	overflow  atomic.Uint64
}

func newLink(cfg Link, seed uint64) *link {
	if cfg.Rate > 0 && cfg.Queue <= 0 {
		cfg.Queue = int(cfg.Rate / 20)
	}
	return &link{cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), q: make(chan packet, maxPackets)}
}

// admit decides p's fate and queues a copy of it for delivery.
func (l *link) admit(p []byte, addr net.Addr) {
	l.sent.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cfg.Loss > 0 && l.rng.Float64() < l.cfg.Loss {
		l.lost.Add(1)
		return
	}
	now := time.Now()
	due := now
	if l.cfg.Rate > 0 {
		start := now
		if l.busyUntil.After(now) {
			start = l.busyUntil
		}
		queued := int64(start.Sub(now)) * l.cfg.Rate / int64(time.Second)
		if queued+int64(len(p)) > int64(l.cfg.Queue) {
			l.overflow.Add(1)
			return
		}
		l.busyUntil = start.Add(time.Duration(int64(len(p)) * int64(time.Second) / l.cfg.Rate))
		due = l.busyUntil
	}
	select {
	case l.q <- packet{b: append([]byte(nil), p...), addr: addr, due: due.Add(l.cfg.Delay)}:
	default:
		l.overflow.Add(1)
	}
}

// run delivers queued datagrams when they are due, until done closes.
func (l *link) run(done <-chan struct{}, deliver func(packet)) {
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		var p packet
		select {
		case p = <-l.q:
		case <-done:
			return
		}
		if d := time.Until(p.due); d > 0 {
			t.Reset(d)
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
		deliver(p)
	}
}

func (l *link) stats() Stats {
	return Stats{Sent: l.sent.Load(), Lost: l.lost.Load(), Overflowed: l.overflow.Load()}
}

// Conn is a net.PacketConn whose datagrams cross modelled links.
type Conn struct {
	inner    net.PacketConn
	out, in  *link
	ready    chan packet
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	deadline atomic.Pointer[time.Time]
}

// Wrap returns pc with out applied to what it sends and in to what it
// receives; seed makes the losses repeatable. Closing the Conn closes pc.
func Wrap(pc net.PacketConn, out, in Link, seed uint64) *Conn {
	c := &Conn{
		inner: pc,
		out:   newLink(out, seed),
		in:    newLink(in, seed+1),
		ready: make(chan packet, 4096),
		done:  make(chan struct{}),
	}
	c.wg.Add(3)
	go func() {
		defer c.wg.Done()
		c.out.run(c.done, func(p packet) { _, _ = c.inner.WriteTo(p.b, p.addr) })
	}()
	go func() {
		defer c.wg.Done()
		c.in.run(c.done, func(p packet) {
			select {
			case c.ready <- p:
			default: // the reader is behind: a full socket buffer drops
			}
		})
	}()
	go func() {
		defer c.wg.Done()
		buf := make([]byte, 64<<10)
		for {
			n, addr, err := c.inner.ReadFrom(buf)
			if err != nil {
				c.Close()
				return
			}
			c.in.admit(buf[:n], addr)
		}
	}()
	return c
}

// OutStats and InStats count the datagrams sent and received so far.
func (c *Conn) OutStats() Stats { return c.out.stats() }

// InStats counts the datagrams received so far.
func (c *Conn) InStats() Stats { return c.in.stats() }

// WriteTo sends p across the outgoing link.
func (c *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	select {
	case <-c.done:
		return 0, net.ErrClosed
	default:
	}
	c.out.admit(p, addr)
	return len(p), nil
}

// ReadFrom returns the next datagram that crossed the incoming link.
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	var timeout <-chan time.Time
	if d := c.deadline.Load(); d != nil && !d.IsZero() {
		t := time.NewTimer(time.Until(*d))
		defer t.Stop()
		timeout = t.C
	}
	select {
	case pk := <-c.ready:
		return copy(p, pk.b), pk.addr, nil
	case <-c.done:
		return 0, nil, net.ErrClosed
	case <-timeout:
		return 0, nil, os.ErrDeadlineExceeded
	}
}

// Close stops the links and closes the socket; it is idempotent.
func (c *Conn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.done)
		err = c.inner.Close()
	})
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Wait waits for the Conn's goroutines after Close.
func (c *Conn) Wait() { c.wg.Wait() }

// LocalAddr is the socket's address.
func (c *Conn) LocalAddr() net.Addr { return c.inner.LocalAddr() }

// SetDeadline sets the read deadline (writes never block).
func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline sets the time after which ReadFrom fails.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.deadline.Store(&t)
	return nil
}

// SetWriteDeadline does nothing: writes never block.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
