//go:build linux

package fdwatch

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newWatcher(t *testing.T) *Watcher {
	t.Helper()
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}

// watch adds c to w with a function that signals each call on the
// returned channel.
func watch(t *testing.T, w *Watcher, c *net.TCPConn) (*Watch, <-chan struct{}) {
	t.Helper()
	calls := make(chan struct{}, 10)
	wt, err := w.Add(c, func() { calls <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	return wt, calls
}

// fired waits for one call of a watch's function.
func fired(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("watch function not called")
	}
}

// notFired checks that the function is not called while the socket is
// quiet (a short look: it would be called at once if it were going to).
func notFired(t *testing.T, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
		t.Fatal("watch function called")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestWatch follows one socket: quiet, data (read without waiting), end
// of stream.
func TestWatch(t *testing.T) {
	w := newWatcher(t)
	srv, cli := loopback.TCPPair(t)
	wt, calls := watch(t, w, srv)
	notFired(t, calls)
	buf := make([]byte, 16)
	if n, err := wt.ReadNow(buf); n != 0 || err != nil {
		t.Fatalf("ReadNow on a quiet socket = %d, %v", n, err)
	}

	if _, err := cli.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	fired(t, calls)
	if n, err := wt.ReadNow(buf); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("ReadNow = %q, %v", buf[:n], err)
	}
	// One-shot: more data does not call the function until Rearm.
	if _, err := cli.Write([]byte("more")); err != nil {
		t.Fatal(err)
	}
	notFired(t, calls)
	if err := wt.Rearm(); err != nil {
		t.Fatal(err)
	}
	fired(t, calls) // the data already there
	if n, err := wt.ReadNow(buf); err != nil || string(buf[:n]) != "more" {
		t.Fatalf("ReadNow = %q, %v", buf[:n], err)
	}

	if err := wt.Rearm(); err != nil {
		t.Fatal(err)
	}
	cli.Close()
	fired(t, calls)
	if _, err := wt.ReadNow(buf); !errors.Is(err, io.EOF) {
		t.Fatalf("ReadNow after close = %v, want EOF", err)
	}
	wt.Remove()
	if err := wt.Rearm(); !errors.Is(err, ErrClosed) {
		t.Errorf("Rearm after Remove = %v, want ErrClosed", err)
	}
}

// TestRemoveThenReuse: a removed socket goes back to ordinary blocking use.
func TestRemoveThenReuse(t *testing.T) {
	w := newWatcher(t)
	srv, cli := loopback.TCPPair(t)
	wt, calls := watch(t, w, srv)
	wt.Remove()
	if _, err := cli.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	notFired(t, calls)
	buf := make([]byte, 1)
	if err := srv.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(srv, buf); err != nil || buf[0] != 'x' {
		t.Fatalf("read %q, %v", buf, err)
	}
}

// TestManyAndClose watches many sockets at once, then closes the watcher
// with some still registered.
func TestManyAndClose(t *testing.T) {
	w, err := New()
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	calls := make(chan int, n)
	clients := make([]net.Conn, n)
	for i := range n {
		srv, cli := loopback.TCPPair(t)
		clients[i] = cli
		if _, err := w.Add(srv, func() { calls <- i }); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		c.Close()
	}
	seen := make(map[int]bool)
	for range n {
		select {
		case i := <-calls:
			seen[i] = true
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of %d watches fired", len(seen), n)
		}
	}
	if len(seen) != n {
		t.Errorf("%d distinct watches fired, want %d", len(seen), n)
	}
	w.Close()
	w.Close() // idempotent
	srv, _ := loopback.TCPPair(t)
	if _, err := w.Add(srv, func() {}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
}

// TestTokens: a watcher made by NewTokens reports the token a socket was
// armed under, once per Arm.
func TestTokens(t *testing.T) {
	fired := make(chan uint64, 10)
	w, err := NewTokens(func(token uint64) { fired <- token }, func() { t.Error("watcher failed") })
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	srv, cli := loopback.TCPPair(t)
	rc, err := srv.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Arm(rc, 7); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for range 2 { // armed again with the byte unread: fires at once
		select {
		case token := <-fired:
			if token != 7 {
				t.Fatalf("token %d, want 7", token)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("not fired")
		}
		if err := w.Arm(rc, 7); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if err := w.Arm(rc, 7); !errors.Is(err, ErrClosed) {
		t.Errorf("Arm after Close = %v, want ErrClosed", err)
	}
}
