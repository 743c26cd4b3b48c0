package relay

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// What one client costs the relay, measured in the relay's own heap: the
// clients run in a child process (this test binary again, in
// TestSessionMemoryClients), so that nothing of theirs is counted. Each
// client is what a Snowflake client brings: a carrier with its own
// ClientID, KCP and smux; an idle one echoed one byte on a stream it then
// closed, an active one keeps its stream open (the relay then also holds
// the stream, its forwarding goroutines and the target connection).
// docs/performance.md ("Many users") gives the figures.

// Environment of the child process.
const (
	sessionMemURLEnv    = "FLURRY_SESSIONMEM_URL"
	sessionMemCountEnv  = "FLURRY_SESSIONMEM_SESSIONS"
	sessionMemActiveEnv = "FLURRY_SESSIONMEM_ACTIVE"
)

// sessionCost is the relay's heap and goroutines per client.
type sessionCost struct {
	heapBytes, stackBytes float64 // per session, live after a collection
	goroutines            float64 // per session
}

// measureSessionCost runs n clients against a fresh relay and returns what
// each costs it.
func measureSessionCost(tb testing.TB, n int, active bool) sessionCost {
	tb.Helper()
	_, url := startRelay(tb, Config{
		ForwardAddr: echoServer(tb), NewSessionRate: -1, MaxCarriersPerAddr: -1,
	})
	before := liveMemory()
	g0 := runtime.NumGoroutine()

	cmd := exec.Command(os.Args[0], "-test.run=^TestSessionMemoryClients$", "-test.v")
	cmd.Env = append(os.Environ(), sessionMemURLEnv+"="+url, sessionMemCountEnv+"="+strconv.Itoa(n),
		sessionMemActiveEnv+"="+strconv.FormatBool(active))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	defer func() {
		stdin.Close() // the child closes its clients and exits
		_ = cmd.Wait()
	}()
	ready := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if sc.Text() == "sessionmem: ready" {
				ready <- nil
				break
			}
		}
		ready <- fmt.Errorf("child ended before its clients were ready")
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case err := <-ready:
		if err != nil {
			tb.Fatal(err)
		}
	case <-time.After(2 * time.Minute):
		tb.Fatal("clients not ready within 2 minutes")
	}
	// Let smux's keep-alives and the first send-window ticks pass.
	time.Sleep(time.Second)
	after := liveMemory()
	g1 := runtime.NumGoroutine()
	return sessionCost{
		heapBytes:  float64(after.heap-before.heap) / float64(n),
		stackBytes: float64(after.stack-before.stack) / float64(n),
		goroutines: float64(g1-g0) / float64(n),
	}
}

type memSample struct{ heap, stack int64 }

// liveMemory is the heap live after two collections, and the stacks.
func liveMemory() memSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{heap: int64(m.HeapAlloc), stack: int64(m.StackInuse)}
}

// TestSessionMemoryClients is the child process of measureSessionCost; it
// does nothing when run on its own.
func TestSessionMemoryClients(t *testing.T) {
	url := os.Getenv(sessionMemURLEnv)
	if url == "" {
		t.Skip("the child process of the session memory measurements")
	}
	n, err := strconv.Atoi(os.Getenv(sessionMemCountEnv))
	if err != nil {
		t.Fatal(err)
	}
	active := os.Getenv(sessionMemActiveEnv) == "true"
	for range n {
		c := newTestClient(t, newTestPacketConn(turbotunnel.NewClientID()))
		c.pconn.dialCarrier(t, url)
		st, err := c.smux.OpenStream()
		if err != nil {
			t.Fatal(err)
		}
		_ = st.SetDeadline(time.Now().Add(30 * time.Second))
		var b [1]byte
		if _, err := st.Write([]byte{'x'}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(st, b[:]); err != nil {
			t.Fatal(err)
		}
		_ = st.SetDeadline(time.Time{})
		if !active {
			st.Close()
		}
	}
	fmt.Println("sessionmem: ready")
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent is done
}

// BenchmarkSessionMemory reports the relay's heap, stack and goroutines per
// idle and per active client (400 clients; 20 under make bench-smoke).
func BenchmarkSessionMemory(b *testing.B) {
	n := 400
	if os.Getenv("FLURRY_BENCH_SMOKE") == "1" {
		n = 20
	}
	// A first round grows what the process grows once (kcp-go's
	// scheduler, the pools): not per session.
	measureSessionCost(b, n/4, true)
	for _, active := range []bool{false, true} {
		b.Run(map[bool]string{false: "idle", true: "active"}[active], func(b *testing.B) {
			var c sessionCost
			for range b.N {
				c = measureSessionCost(b, n, active)
			}
			b.ReportMetric(c.heapBytes, "heap-B/session")
			b.ReportMetric(c.stackBytes, "stack-B/session")
			b.ReportMetric(c.goroutines, "goroutines/session")
		})
	}
}
