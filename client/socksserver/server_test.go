package socksserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/client"
)

// hangGuard bounds every wait; nothing is synchronised on it.
const hangGuard = 20 * time.Second

// goptlibHandshakeTimeout is goptlib's deadline for a SOCKS handshake: a
// silent connection held up every other one this long.
const goptlibHandshakeTimeout = 5 * time.Second

// startServer runs a Server on a loopback port whose clients find no
// broker.
func startServer(tb testing.TB) (addr string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	s, err := New(Config{Client: client.Config{BrokerURL: "http://127.0.0.1:1/", LoopbackOnly: true}})
	if err != nil {
		tb.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln) }()
	tb.Cleanup(func() {
		s.Close()
		if err := <-done; err != nil {
			tb.Errorf("Serve = %v", err)
		}
	})
	return ln.Addr().String()
}

// len returns the number of Clients kept.
func (bs *bridges) len() int {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	return len(bs.entries)
}

// greet sends a SOCKS5 greeting offering "no authentication" and reads the
// method selection.
func greet(conn net.Conn) error {
	if _, err := conn.Write([]byte{5, 1, 0}); err != nil {
		return err
	}
	var sel [2]byte
	if _, err := io.ReadFull(conn, sel[:]); err != nil {
		return err
	}
	if sel != [2]byte{5, 0} {
		return fmt.Errorf("method selection %x", sel)
	}
	return nil
}

// TestSilentConnectionDoesNotBlockOthers: while a local connection sends
// nothing, others are served at once (goptlib alone handshakes inside
// Accept, one connection at a time, each for up to 5 s).
func TestSilentConnectionDoesNotBlockOthers(t *testing.T) {
	addr := startServer(t)
	silentClosed := make(chan struct{})
	var once sync.Once
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() {
			_, _ = c.Read(make([]byte, 1))
			once.Do(func() { close(silentClosed) })
		}()
	}
	start := time.Now()
	for i := range 5 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(hangGuard))
		if err := greet(c); err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		c.Close()
	}
	elapsed := time.Since(start)
	select {
	case <-silentClosed:
		t.Fatal("the greetings were answered only after a silent connection was dropped")
	default:
	}
	if elapsed >= goptlibHandshakeTimeout/2 {
		t.Fatalf("5 greetings took %v behind 3 silent connections, want well under %v", elapsed, goptlibHandshakeTimeout)
	}
}

// TestBridgesBounded: distinct bridge lines keep at most maxBridges
// Clients; an idle one is evicted for a new line, and when all are in use
// a new line is refused.
func TestBridgesBounded(t *testing.T) {
	created := 0
	const maxBridges = DefaultMaxBridges
	bs := newBridges(maxBridges, func(args pt.Args) (*client.Client, error) {
		created++
		return client.New(client.Config{BrokerURL: "http://127.0.0.1:1/", LoopbackOnly: true})
	})
	defer bs.close()
	args := func(i int) pt.Args { return pt.Args{"url": {fmt.Sprintf("http://127.0.0.1:1/%d", i)}} }

	var releases []func()
	for i := range maxBridges {
		_, release, err := bs.acquire(args(i))
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, release)
	}
	if _, _, err := bs.acquire(args(maxBridges)); !errors.Is(err, errTooManyBridges) {
		t.Fatalf("bridge line %d with all in use: %v, want errTooManyBridges", maxBridges+1, err)
	}
	// The same line again shares its Client.
	if _, release, err := bs.acquire(args(3)); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	for _, r := range releases {
		r()
	}
	for i := maxBridges; i < 4*maxBridges; i++ {
		_, release, err := bs.acquire(args(i))
		if err != nil {
			t.Fatalf("bridge line %d: %v", i, err)
		}
		release()
		if n := bs.len(); n > maxBridges {
			t.Fatalf("%d Clients kept, want at most %d", n, maxBridges)
		}
	}
	if created != 4*maxBridges {
		t.Errorf("%d Clients created, want %d", created, 4*maxBridges)
	}
}

// TestSilentHandshakesEvicted: a local program that holds every handshake
// slot with connections that never speak does not lock out honest SOCKS
// clients: each new connection evicts the oldest silent one.
func TestSilentHandshakesEvicted(t *testing.T) {
	addr := startServer(t)
	for range DefaultMaxHandshakes {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(hangGuard))
		if err := greet(c); err != nil {
			t.Fatalf("greeting %d behind %d silent connections: %v", i, DefaultMaxHandshakes, err)
		}
		c.Close()
	}
}

// TestSilentConnectionClosed: a connection that sends nothing is closed
// after firstByteTimeout, not held for goptlib's whole handshake deadline.
func TestSilentConnectionClosed(t *testing.T) {
	addr := startServer(t)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(hangGuard))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("silent connection: read %v, want EOF (closed by the server)", err)
	}
}
