package broker

import (
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/internal/peerlimit"
)

// Listener returns a listener to serve Handler on (with http.Server.Serve,
// never ServeTLS): it accepts ln's connections, doing TLS itself when
// tlsConfig is not nil (put "h2" in its NextProtos to offer HTTP/2), and
// also hands back the HTTP/1.1 connections whose proxy polls the broker
// parked.
//
// # Parked polls
//
// A proxy poll served on one of these connections over HTTP/1.1 keeps no
// goroutine and no buffers while it waits. Once the poll is in its pool,
// the handler hijacks the connection, drops net/http's buffers and
// returns; one goroutine of the broker watches every parked socket (epoll
// on Linux), so that a proxy that disconnects leaves the pool at once, and
// a timer ends the hold. On a match, the end of the hold or Close a
// short-lived goroutine writes the response (the same bytes net/http
// would); the connection then waits, watched the same way, for its next
// request as net/http would for an idle keep-alive connection (the
// server's IdleTimeout), and goes back through Accept, with any byte read
// while it was parked replayed first. Connections without a socket to
// watch (not a syscall.Conn), and systems other than Linux, keep their
// polls in the handler. See docs/performance.md for what this saves.
//
// Accept returns a connection only while fewer than 32 of those it
// returned are between Accept and the moment their request starts waiting
// or is answered (a place held longer than 20 ms stops counting): the
// others wait in the kernel's accept queue, so that a wave of polls does
// not pass through net/http at once.
//
// Polls over HTTP/2, on connections from other listeners (an
// httptest.Server, a listener of your own) or whose request asks to close
// the connection are served by the handler goroutine as usual.
//
// The http.Server does not track parked connections (its ConnState hook
// sees them hijacked, and new again when they come back): call
// Broker.Shutdown before http.Server.Shutdown (as always); it answers every
// parked poll and closes the connections the broker holds. Closing the
// listener closes ln and every connection waiting to be handed back.
func (b *Broker) Listener(ln net.Listener, tlsConfig *tls.Config) net.Listener {
	l := &listener{
		inner:    ln,
		b:        b,
		tls:      tlsConfig,
		accepted: make(chan acceptResult),
		returned: make(chan struct{}, 1),
		done:     make(chan struct{}),
		stopped:  make(chan struct{}),

		admission: newAdmission(),
	}
	if max := b.cfg.MaxConnsPerAddr; max > 0 {
		l.peers = peerlimit.NewShared(max, fileLimit()*3/4)
	}
	go l.acceptLoop()
	return l
}

// listener is the net.Listener returned by Broker.Listener.
type listener struct {
	inner net.Listener
	b     *Broker
	tls   *tls.Config // nil: plain

	accepted chan acceptResult // from acceptLoop
	returned chan struct{}     // signalled when queue grows
	done     chan struct{}     // closed by Close
	stopped  chan struct{}     // closed when acceptLoop returns
	err      error             // why acceptLoop ended; read after stopped

	admission *admission         // of the connections Accept returns
	peers     *peerlimit.Counter // connections per address; nil: no limit

	mu     sync.Mutex
	queue  []net.Conn // connections for net/http not yet accepted
	closed bool
}

type acceptResult struct {
	c       net.Conn
	err     error
	key     netip.Addr // c's key in peers
	counted bool       // c holds a place in peers
}

// acceptLoop accepts ln's connections one at a time, each when Accept asks
// for it, until ln fails for good or the listener is closed.
func (l *listener) acceptLoop() {
	defer close(l.stopped)
	for {
		c, err := l.inner.Accept()
		r := acceptResult{c: c, err: err}
		if err != nil {
			l.b.acceptFailed(stats.ListenerRendezvous, err)
			// A temporary error (out of file descriptors) goes to the
			// server, which retries after a pause; any other ends the
			// loop, and Accept returns it from then on.
			var te interface{ Temporary() bool }
			if !errors.As(err, &te) || !te.Temporary() {
				l.err = err
				return
			}
		} else if r.key, r.counted = l.admitPeer(c); r.key.IsValid() && !r.counted {
			// The address holds its maximum: closed before it is read.
			c.Close()
			l.b.stats.ConnRefused()
			continue
		}
		select {
		case l.accepted <- r:
		case <-l.done:
			if c != nil {
				c.Close()
				if r.counted {
					l.peers.Release(r.key)
				}
			}
			return
		}
	}
}

// Accept returns the next new or handed-back connection, once it may
// enter net/http (see admission).
func (l *listener) Accept() (net.Conn, error) {
	c, err := l.next()
	if err != nil {
		return nil, err
	}
	if !l.admission.admit(parkConnOf(c), l.done) {
		c.Close()
		return nil, net.ErrClosed
	}
	return c, nil
}

// next returns the next handed-back connection or, if there is none, a
// new one.
func (l *listener) next() (net.Conn, error) {
	for {
		l.mu.Lock()
		if q := l.queue; len(q) > 0 {
			c := q[0]
			q[0] = nil
			l.queue = q[1:]
			if len(q) == 1 {
				l.queue = nil
			}
			l.mu.Unlock()
			return c, nil
		}
		l.mu.Unlock()
		select {
		case r := <-l.accepted:
			if r.err != nil {
				return nil, r.err
			}
			return l.wrap(r), nil
		case <-l.returned:
		case <-l.stopped:
			select {
			case <-l.done:
				return nil, net.ErrClosed
			default:
			}
			return nil, l.err
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
}

// admitPeer counts c against its address's limit. It returns c's key and
// whether c was counted; an invalid key means c is not limited (no limit,
// an exempt address, or no IP address).
func (l *listener) admitPeer(c net.Conn) (netip.Addr, bool) {
	if l.peers == nil {
		return netip.Addr{}, false
	}
	t, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return netip.Addr{}, false
	}
	addr, _ := netip.AddrFromSlice(t.IP)
	if !addr.IsValid() || l.b.limits.isExempt(addr) {
		return netip.Addr{}, false
	}
	key := peerlimit.Key(addr)
	return key, l.peers.Acquire(key)
}

// wrap makes a new connection a parkConn, under TLS if configured.
func (l *listener) wrap(r acceptResult) net.Conn {
	c := r.c
	pc := &parkConn{Conn: c, l: l, key: r.key}
	pc.counted.Store(r.counted)
	pc.sc, _ = c.(syscall.Conn)
	if l.tls != nil {
		return tls.Server(pc, l.tls)
	}
	return pc
}

// handBack queues c (a parkConn, or a *tls.Conn over one), whose next
// request has started to arrive, for Accept (net/http); or closes it if
// the listener is closed. It never blocks.
func (l *listener) handBack(c net.Conn) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		c.Close()
		return
	}
	l.queue = append(l.queue, c)
	l.mu.Unlock()
	select {
	case l.returned <- struct{}{}:
	default:
	}
}

// Close closes ln and the connections waiting to be handed back, and waits
// for the accepting goroutine. It is idempotent.
func (l *listener) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		<-l.stopped
		return nil
	}
	l.closed = true
	queue := l.queue
	l.queue = nil
	close(l.done)
	l.mu.Unlock()
	err := l.inner.Close()
	<-l.stopped
	for _, c := range queue {
		c.Close()
	}
	return err
}

func (l *listener) Addr() net.Addr { return l.inner.Addr() }

// parkConn is a connection accepted by a listener. Its LocalAddr carries
// it, so that the handler can tell, before hijacking, that the connection
// can be parked and handed back. Bytes read while it was parked are
// replayed first.
type parkConn struct {
	net.Conn
	l  *listener
	sc syscall.Conn // Conn's socket, for fdwatch; nil: cannot be parked
	// replay is owned by whoever owns the connection: the parked poll's
	// goroutine fills it, the HTTP server reads it after Accept.
	replay []byte
	// afterPOST: the connection comes back after a parked poll, a POST,
	// whose connection net/http would have kept: its first Read drops the
	// CR and LF bytes the next request starts with, as net/http does
	// after a POST (see dropLeadingCRLF). Owned as replay is.
	afterPOST bool

	// admitSeq identifies the admission into net/http it holds (0: none);
	// guarded by l.admission.mu.
	admitSeq uint64

	key     netip.Addr  // the key of its place in l.peers
	counted atomic.Bool // it holds a place in l.peers, until Close
}

// parkAddr is the LocalAddr of a parkConn: the real address, marked.
type parkAddr struct {
	net.Addr
	pc *parkConn
}

func (c *parkConn) LocalAddr() net.Addr { return parkAddr{c.Conn.LocalAddr(), c} }

func (c *parkConn) Read(p []byte) (int, error) {
	if c.afterPOST {
		c.afterPOST = false
		if err := c.dropLeadingCRLF(); err != nil && len(c.replay) == 0 {
			return 0, err
		}
	}
	if len(c.replay) == 0 {
		return c.Conn.Read(p)
	}
	n := copy(p, c.replay)
	c.replay = c.replay[n:]
	if len(c.replay) == 0 {
		c.replay = nil
	}
	return n, nil
}

// dropLeadingCRLF does what net/http does before reading the request that
// follows a POST on a connection, for old clients that end a body with a
// CRLF (RFC 9112, section 2.2): it waits until 4 bytes are at hand (as
// net/http's Peek(4), within the deadline net/http has set) and drops the
// CR and LF bytes they start with. An error ends the wait; the bytes at
// hand are read first.
func (c *parkConn) dropLeadingCRLF() error {
	var err error
	for len(c.replay) < 4 && err == nil {
		var b [4]byte
		var n int
		n, err = c.Conn.Read(b[:4-len(c.replay)])
		c.replay = append(c.replay, b[:n]...)
	}
	k := 0
	for k < min(len(c.replay), 4) && (c.replay[k] == '\r' || c.replay[k] == '\n') {
		k++
	}
	if c.replay = c.replay[k:]; len(c.replay) == 0 {
		c.replay = nil
	}
	return err
}

// Close closes the connection, ends its admission into net/http and
// gives back its place in its address's count.
func (c *parkConn) Close() error {
	c.l.admission.release(c)
	if c.counted.Swap(false) {
		c.l.peers.Release(c.key)
	}
	return c.Conn.Close()
}

// CloseWrite lets net/http half-close the connection as it does a TCP one.
func (c *parkConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
