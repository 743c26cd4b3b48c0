// Package loopback runs a test's servers on loopback listeners that stop
// when the test ends. It imports no role, so that the roles' own tests can
// use it as well as chaintest.
package loopback

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
)

// listen opens a TCP listener on an ephemeral loopback port.
func listen(tb testing.TB) net.Listener {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return ln
}

// Serve runs serve on a loopback listener and returns the listener's
// address. When the test ends it cancels serve's context and waits for
// serve to return; an error other than ctx's end, a closed listener or
// one of ignore fails the test.
func Serve(tb testing.TB, serve func(ctx context.Context, ln net.Listener) error, ignore ...error) string {
	tb.Helper()
	ln := listen(tb)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- serve(ctx, ln) }()
	tb.Cleanup(func() {
		cancel()
		err := <-errc
		ln.Close()
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, net.ErrClosed) {
			return
		}
		for _, e := range ignore {
			if errors.Is(err, e) {
				return
			}
		}
		tb.Errorf("serving %s: %v", ln.Addr(), err)
	})
	return ln.Addr().String()
}

// Accept runs handle on its own goroutine for every connection accepted
// on a loopback listener, and returns the listener's address. When the
// test ends it closes the listener and every connection still open, and
// waits for the handlers to return.
func Accept(tb testing.TB, handle func(net.Conn)) string {
	tb.Helper()
	ln := listen(tb)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]struct{}{}
	)
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				handle(c)
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TCPPair returns both ends of a loopback TCP connection; both are closed
// when the test ends.
func TCPPair(tb testing.TB) (server *net.TCPConn, client net.Conn) {
	tb.Helper()
	ln := listen(tb)
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	c, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn), client
}
