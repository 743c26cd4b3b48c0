package main

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
)

// Accept loop limits. goptlib's AcceptSocks runs the SOCKS handshake (up to
// its 5 s deadline) inside Accept, so one silent local connection would hold
// up every other; the loop below accepts raw connections and runs each
// handshake in its own goroutine instead.
const (
	// maxHandshakes bounds the SOCKS handshakes in progress; a connection
	// beyond it is closed at once.
	maxHandshakes = 128
	// acceptBackoffMin and acceptBackoffMax bound the pause after a
	// temporary accept error (EMFILE and the like), doubling in between.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// acceptLoop accepts SOCKS connections until ln is closed. Temporary
// errors (out of file descriptors or memory, a connection aborted before
// it was accepted) pause the loop with back-off instead of ending it; any
// other error ends it and calls fatal, so that the process exits rather
// than staying up accepting nothing.
func (s *server) acceptLoop(ctx context.Context, ln net.Listener, fatal func()) {
	defer s.wg.Done()
	slots := make(chan struct{}, maxHandshakes)
	backoff := time.Duration(0)
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			if !temporaryAcceptError(err) {
				s.log.Error("SOCKS accept failed; exiting", "err", err)
				fatal()
				return
			}
			if backoff == 0 {
				s.log.Warn("SOCKS accept failed; retrying", "err", err)
				backoff = acceptBackoffMin
			} else {
				backoff = min(2*backoff, acceptBackoffMax)
			}
			t := time.NewTimer(backoff)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			continue
		}
		if backoff != 0 {
			s.log.Info("SOCKS accept works again")
			backoff = 0
		}
		select {
		case slots <- struct{}{}:
		default:
			s.log.Debug("too many SOCKS handshakes in progress; connection closed")
			_ = c.Close()
			continue
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, c, slots)
		}()
	}
}

// serveConn runs the SOCKS handshake of c (goptlib's, with its deadline),
// frees its handshake slot, and carries the connection.
func (s *server) serveConn(ctx context.Context, c net.Conn, slots <-chan struct{}) {
	stop := context.AfterFunc(ctx, func() { _ = c.Close() })
	defer stop()
	conn, err := pt.NewSocksListener(&oneConnListener{c: c}).AcceptSocks()
	<-slots
	if err != nil {
		// goptlib has closed c; a failed handshake is the local
		// application's business, not worth a log line.
		return
	}
	s.handle(ctx, conn)
}

// temporaryAcceptError reports whether an Accept error may go away by
// itself, so that accepting should be retried.
func temporaryAcceptError(err error) bool {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
			syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO,
			syscall.EINTR, syscall.EAGAIN, syscall.ETIMEDOUT:
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
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
