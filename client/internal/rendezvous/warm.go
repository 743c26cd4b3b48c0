package rendezvous

import (
	"context"
	"net"
	"sync"
	"time"
)

// A connection opened ahead of a request (Warm) lets the request skip
// the TCP (and, through uTLS, the TLS) round trips: the client opens it
// while it gathers ICE candidates for the offer the request will carry.
const (
	// warmHold is how long a connection opened ahead waits for its
	// request before it is closed.
	warmHold = 10 * time.Second
	// warmSkip: a host that answered within this time probably still has
	// an idle connection in the transport's pool, so none is opened ahead.
	warmSkip = 30 * time.Second
)

// warmPool holds at most one connection opened ahead per address.
type warmPool struct {
	// open dials addr (host:port) and, for uTLS, handshakes.
	open func(ctx context.Context, addr string) (net.Conn, error)

	mu       sync.Mutex
	conns    map[string]*warmConn
	answered map[string]time.Time // when addr last answered a request
}

// warmConn is a connection being opened, or opened and not yet taken.
type warmConn struct {
	done chan struct{} // closed once conn and err are set
	conn net.Conn
	err  error
}

func newWarmPool(open func(ctx context.Context, addr string) (net.Conn, error)) *warmPool {
	return &warmPool{open: open, conns: make(map[string]*warmConn), answered: make(map[string]time.Time)}
}

// warm starts opening a connection to addr in the background, unless one
// is already there or addr answered a request recently.
func (p *warmPool) warm(addr string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conns[addr] != nil || time.Since(p.answered[addr]) < warmSkip {
		return
	}
	w := &warmConn{done: make(chan struct{})}
	p.conns[addr] = w
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), dialTimeout+tlsHandshakeTimeout)
		w.conn, w.err = p.open(ctx, addr)
		cancel()
		close(w.done)
		time.AfterFunc(warmHold, func() { p.expire(addr, w) })
	}()
}

// take returns the connection opened ahead to addr, waiting while it is
// being opened; ok is false if there is none, if opening it failed or if
// ctx ends first.
func (p *warmPool) take(ctx context.Context, addr string) (conn net.Conn, ok bool) {
	p.mu.Lock()
	w := p.conns[addr]
	delete(p.conns, addr)
	p.mu.Unlock()
	if w == nil {
		return nil, false
	}
	select {
	case <-w.done:
	case <-ctx.Done():
		go closeWhenOpen(w)
		return nil, false
	}
	return w.conn, w.err == nil
}

// dialer returns a DialContext that takes the connection opened ahead to
// an address when there is one and dials with dial otherwise.
func (p *warmPool) dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if c, ok := p.take(ctx, addr); ok {
			return c, nil
		}
		return dial(ctx, network, addr)
	}
}

// answeredBy records that addr answered a request now.
func (p *warmPool) answeredBy(addr string) {
	p.mu.Lock()
	p.answered[addr] = time.Now()
	p.mu.Unlock()
}

// expire closes w if nothing took it.
func (p *warmPool) expire(addr string, w *warmConn) {
	p.mu.Lock()
	mine := p.conns[addr] == w
	if mine {
		delete(p.conns, addr)
	}
	p.mu.Unlock()
	if mine && w.conn != nil {
		_ = w.conn.Close()
	}
}

// closeIdle closes every connection not taken (once opened).
func (p *warmPool) closeIdle() {
	p.mu.Lock()
	conns := p.conns
	p.conns = make(map[string]*warmConn)
	p.mu.Unlock()
	for _, w := range conns {
		go closeWhenOpen(w)
	}
}

func closeWhenOpen(w *warmConn) {
	<-w.done
	if w.conn != nil {
		_ = w.conn.Close()
	}
}
