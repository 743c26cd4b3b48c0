package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/client"
)

// goptlibHandshakeTimeout is goptlib's deadline for a SOCKS handshake: a
// silent connection held up every other one this long.
const goptlibHandshakeTimeout = 5 * time.Second

// startServer runs the SOCKS accept loop in-process on a loopback port.
func startServer(tb testing.TB) (addr string) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{base: client.Config{BrokerURL: "http://127.0.0.1:1/", LoopbackOnly: true}, log: slog.New(slog.DiscardHandler)}
	s.bridges = newBridges(func(args pt.Args) (*client.Client, error) {
		cfg, err := client.ApplyBridgeArgs(s.base, args)
		if err != nil {
			return nil, err
		}
		return client.New(cfg)
	})
	s.wg.Add(1)
	go s.acceptLoop(ctx, ln, cancel)
	tb.Cleanup(func() {
		cancel()
		_ = ln.Close()
		s.shutdown()
	})
	return ln.Addr().String()
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
	bs := newBridges(func(args pt.Args) (*client.Client, error) {
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

// TestAcceptSurvivesEMFILE runs the binary with a file-descriptor limit
// that local connections exhaust: Accept fails with EMFILE, and once the
// connections are gone the client accepts again (Snowflake's accept loop
// ends for good there).
func TestAcceptSurvivesEMFILE(t *testing.T) {
	bin := buildBinary(t)
	addr := freePort(t)

	// dash and bash set both the soft and the hard limit: the Go runtime
	// raises only the soft one to the hard one.
	cmd := exec.Command("sh", "-c", `ulimit -n 24 && exec "$@"`, "sh",
		bin, "-url", "http://127.0.0.1:1/", "-loopback-only", "-socks", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	ready := make(chan struct{})
	emfile := make(chan struct{})
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(stderr)
		var readyOnce, emfileOnce sync.Once
		for sc.Scan() {
			l := sc.Text()
			logMu.Lock()
			log.WriteString(l + "\n")
			logMu.Unlock()
			if strings.Contains(l, "SOCKS5 proxy on") {
				readyOnce.Do(func() { close(ready) })
			}
			if strings.Contains(l, "too many open files") {
				emfileOnce.Do(func() { close(emfile) })
			}
		}
	}()
	defer func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("client log:\n%s", log.String())
			logMu.Unlock()
		}
	}()
	select {
	case <-ready:
	case <-time.After(hangGuard):
		t.Fatal("SOCKS listener did not start")
	}

	// Silent connections hold the client's descriptors until Accept fails.
	var flood []net.Conn
	for range 64 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		flood = append(flood, c)
	}
	select {
	case <-emfile:
	case <-time.After(hangGuard):
		t.Fatal("Accept never failed with EMFILE")
	}
	for _, c := range flood {
		c.Close()
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(hangGuard))
	if err := greet(c); err != nil {
		t.Fatalf("no SOCKS service after the descriptors came back: %v", err)
	}
}

// TestSilentHandshakesEvicted: a local program that holds every handshake
// slot with connections that never speak does not lock out honest SOCKS
// clients: each new connection evicts the oldest silent one.
func TestSilentHandshakesEvicted(t *testing.T) {
	addr := startServer(t)
	for range maxHandshakes {
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
			t.Fatalf("greeting %d behind %d silent connections: %v", i, maxHandshakes, err)
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
