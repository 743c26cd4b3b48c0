package main

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"sync"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/internal/netaccept"
)

// Accept loop limits. goptlib's AcceptSocks runs the SOCKS handshake (up to
// its 5 s deadline) inside Accept, so one silent local connection would hold
// up every other; the loop below accepts raw connections and runs each
// handshake in its own goroutine instead.
const (
	// maxHandshakes bounds the SOCKS handshakes in progress. A connection
	// beyond it evicts the oldest one that has not sent a byte yet, or is
	// closed at once if every one has.
	maxHandshakes = 128
	// firstByteTimeout is how long a new connection may stay silent: a
	// SOCKS client speaks first, at once.
	firstByteTimeout = time.Second
)

// acceptLoop accepts SOCKS connections until ln is closed. Temporary
// errors (out of file descriptors or memory, a connection aborted before
// it was accepted) pause the loop with back-off instead of ending it; any
// other error ends it and calls fatal, so that the process exits rather
// than staying up accepting nothing.
func (s *server) acceptLoop(ctx context.Context, ln net.Listener, fatal func()) {
	defer s.wg.Done()
	hs := &handshakes{max: maxHandshakes}
	var backoff netaccept.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if !netaccept.Temporary(err) {
				s.log.Error("SOCKS accept failed; exiting", "err", err)
				fatal()
				return
			}
			if !backoff.Failing() {
				s.log.Warn("SOCKS accept failed; retrying", "err", err)
			}
			if !backoff.Wait(ctx) {
				return
			}
			continue
		}
		if backoff.Failing() {
			s.log.Info("SOCKS accept works again")
			backoff.Reset()
		}
		h := hs.admit(c)
		if h == nil {
			s.log.Debug("too many SOCKS handshakes in progress; connection closed")
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, h, hs)
		}()
	}
}

// serveConn waits for the first byte of h's connection, runs its SOCKS
// handshake (goptlib's, with its deadline), frees its handshake slot, and
// carries the connection.
func (s *server) serveConn(ctx context.Context, h *handshake, hs *handshakes) {
	c := h.conn
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		hs.done(h)
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	hs.spoke(h)
	conn, err := pt.NewSocksListener(&oneConnListener{c: &prefixConn{Conn: c, first: first[0]}}).AcceptSocks()
	hs.done(h)
	if err != nil {
		// goptlib has closed c; a failed handshake is the local
		// application's business, not worth a log line.
		return
	}
	s.handle(ctx, conn)
}

// handshakes tracks the SOCKS handshakes in progress, oldest first, so
// that a local program holding every slot with silent connections cannot
// lock out the next honest one.
type handshakes struct {
	max int
	mu  sync.Mutex
	all []*handshake
}

// A handshake is a connection whose SOCKS handshake is in progress.
type handshake struct {
	conn  net.Conn
	spoke bool // it has sent its first byte
}

// admit adds a handshake for c. When all slots are taken it closes the
// oldest connection that has not spoken (its handshake then ends and frees
// the slot), or returns nil if every one has.
func (hs *handshakes) admit(c net.Conn) *handshake {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if len(hs.all) >= hs.max {
		i := slices.IndexFunc(hs.all, func(h *handshake) bool { return !h.spoke })
		if i < 0 {
			return nil
		}
		_ = hs.all[i].conn.Close()
		hs.all = slices.Delete(hs.all, i, i+1)
	}
	h := &handshake{conn: c}
	hs.all = append(hs.all, h)
	return h
}

// spoke marks h as having sent its first byte: it can no longer be evicted.
func (hs *handshakes) spoke(h *handshake) {
	hs.mu.Lock()
	h.spoke = true
	hs.mu.Unlock()
}

// done frees h's slot (if it was not evicted already).
func (hs *handshakes) done(h *handshake) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if i := slices.Index(hs.all, h); i >= 0 {
		hs.all = slices.Delete(hs.all, i, i+1)
	}
}

// prefixConn is a connection whose first byte has been read already: Read
// returns it before the rest.
type prefixConn struct {
	net.Conn
	first byte
	read  bool
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if c.read || len(p) == 0 {
		return c.Conn.Read(p)
	}
	c.read = true
	p[0] = c.first
	return 1, nil
}

// oneConnListener is a net.Listener that yields one connection and then
// fails, so that goptlib's AcceptSocks runs the handshake of a connection
// that is already accepted (its retry after a failed handshake ends there).
type oneConnListener struct{ c net.Conn }

func (l *oneConnListener) Accept() (net.Conn, error) {
	c := l.c
	if c == nil {
		return nil, net.ErrClosed
	}
	l.c = nil
	return c, nil
}

func (l *oneConnListener) Close() error   { return nil }
func (l *oneConnListener) Addr() net.Addr { return addrOf{} }

// addrOf is the placeholder address of a oneConnListener (goptlib never
// asks for it).
type addrOf struct{}

func (addrOf) Network() string { return "tcp" }
func (addrOf) String() string  { return "socks" }
