package interop

import (
	"context"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// chainFileSize is what every chain downloads.
const chainFileSize = 20 << 20

// startChain starts a chain in the child's namespace and stops it when the
// test ends, printing the logs' ends if the test failed.
func startChain(t *testing.T, ctx context.Context, roles Roles) *Chain {
	return startChainConfig(t, ctx, ChainConfig{Roles: roles, FileSize: chainFileSize})
}

// startChainConfig is startChain for a chain configured beyond its roles;
// the binaries, directory and STUN server are filled in.
func startChainConfig(t *testing.T, ctx context.Context, cfg ChainConfig) *Chain {
	t.Helper()
	cfg.Flurry, cfg.Snowflake = binaries(t)
	cfg.Dir = t.TempDir()
	cfg.STUN = stuntest.Start(t, netip.MustParseAddr("127.0.0.1"))
	c, err := StartChain(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", c.LogTails(30))
		}
		c.Close()
	})
	return c
}

// TestChains downloads 20 MiB through each chain of the matrix (every role
// Flurry's or Snowflake's, started with Snowflake's command lines) and
// checks its SHA-256; the matrix of times and speeds is printed at the end.
func TestChains(t *testing.T) {
	results := runCells(t, Matrix(), func(t *testing.T, ctx context.Context, c *Chain) cellResult {
		before := cpuTimes(t, c)
		res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, nil)
		if err != nil {
			t.Fatalf("download: %v", err)
		}
		perMB := map[string]float64{}
		for role, cpu := range cpuTimes(t, c) {
			perMB[role] = float64((cpu - before[role]).Milliseconds()) / (float64(res.Bytes) / 1e6)
		}
		t.Logf("%d bytes intact, first byte after %v, %.2f MB/s, CPU ms per MB %v", res.Bytes, res.FirstByte.Round(time.Millisecond), res.Throughput()/1e6, perMB)
		return cellResult{Bytes: res.Bytes, FirstByte: res.FirstByte, Total: res.Total, MBps: res.Throughput() / 1e6, CPUPerMB: perMB}
	})
	if testing.Short() || len(results) == 0 {
		return
	}
	t.Logf("interop matrix (%d MiB download through each chain, SHA-256 checked):\n%s", chainFileSize>>20, formatMatrix(results, false))
}

// runCells runs cell as a subtest for each chain of order, each in a
// network namespace of its own with its chain started, and returns the
// results the cells reported, by chain name.
func runCells(t *testing.T, order []Roles, cell func(t *testing.T, ctx context.Context, c *Chain) cellResult) map[string]cellResult {
	var mu sync.Mutex
	results := map[string]cellResult{}
	for _, roles := range order {
		t.Run(roles.String(), func(t *testing.T) {
			if !inNetns(t, func(r cellResult) {
				mu.Lock()
				results[roles.String()] = r
				mu.Unlock()
			}) {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			r := cell(t, ctx, startChain(t, ctx, roles))
			r.Name = roles.String()
			report(t, r)
		})
	}
	return results
}

// cpuTimes returns the CPU time each role's process has used so far.
func cpuTimes(t *testing.T, c *Chain) map[string]time.Duration {
	t.Helper()
	out := map[string]time.Duration{}
	for role, p := range map[string]*childproc.Process{"client": c.Client, "proxy": c.Proxies[0], "relay": c.Relay, "broker": c.Broker} {
		s, err := procstat.ReadProc(p.PID())
		if err != nil {
			t.Fatal(err)
		}
		out[role] = s.CPU
	}
	return out
}

// formatMatrix prints one line per chain in Matrix order.
func formatMatrix(results map[string]cellResult, stall bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-10s %-10s %-10s %-10s %10s %8s", "broker", "proxy", "client", "relay", "first byte", "MB/s")
	if stall {
		fmt.Fprintf(&b, " %8s", "stall")
	} else {
		fmt.Fprintf(&b, "   CPU ms/MB: %6s %6s %6s %6s", "client", "proxy", "relay", "broker")
	}
	b.WriteString("\n")
	order := Matrix()
	if stall {
		order = failoverRoles()
	}
	for _, roles := range order {
		r, ok := results[roles.String()]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "%-10s %-10s %-10s %-10s %10s %8.2f", roles.Broker, roles.Proxy, roles.Client, roles.Relay,
			r.FirstByte.Round(10*time.Millisecond), r.MBps)
		if stall {
			fmt.Fprintf(&b, " %8s", r.Stall.Round(100*time.Millisecond))
		} else {
			fmt.Fprintf(&b, "              %6.1f %6.1f %6.1f %6.1f", r.CPUPerMB["client"], r.CPUPerMB["proxy"], r.CPUPerMB["relay"], r.CPUPerMB["broker"])
		}
		b.WriteString("\n")
	}
	return b.String()
}

// failoverRoles are the chains of TestFailover: Flurry's client with
// Snowflake's broker, proxy and server, and Snowflake's client with
// Flurry's.
func failoverRoles() []Roles {
	return []Roles{
		{Broker: Snowflake, Proxy: Snowflake, Client: Flurry, Relay: Snowflake},
		{Broker: Flurry, Proxy: Flurry, Client: Snowflake, Relay: Flurry},
	}
}

// TestFailover SIGKILLs the serving proxy at 30 % of a download and starts
// a new one at once; the download must finish intact. The stall (the
// longest time without a byte after the kill) is recorded.
func TestFailover(t *testing.T) {
	results := runCells(t, failoverRoles(), func(t *testing.T, ctx context.Context, c *Chain) cellResult {
		var progress demo.Progress
		type fetched struct {
			res demo.FetchResult
			err error
		}
		done := make(chan fetched, 1)
		go func() {
			res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, &progress)
			done <- fetched{res, err}
		}()
		// Poll the byte count until 30 % has arrived.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for progress.Bytes() < chainFileSize*3/10 {
			select {
			case f := <-done:
				t.Fatalf("download ended before 30 %%: %+v, %v", f.res, f.err)
			case <-ctx.Done():
				t.Fatalf("30 %% not reached: %d bytes", progress.Bytes())
			case <-tick.C:
			}
		}
		old := c.Proxies[0]
		if err := old.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed, at := time.Now(), progress.Bytes()
		if _, err := c.StartProxy(ctx); err != nil {
			t.Fatal(err)
		}
		// The stall is the longest time after the kill in which no byte
		// arrived, to the poll's 20 ms. (Counting from the kill until some
		// bytes arrived would count the bytes the client's socket already
		// held: with large socket buffers, more than a margin could tell.)
		var stall time.Duration
		last, lastAt := at, killed
	wait:
		for {
			select {
			case f := <-done:
				done <- f
				break wait
			case <-ctx.Done():
				t.Fatalf("the download did not end after the kill (%d bytes)", progress.Bytes())
			case now := <-tick.C:
				if b := progress.Bytes(); b != last {
					last, lastAt = b, now
				} else {
					stall = max(stall, now.Sub(lastAt))
				}
			}
		}
		f := <-done
		if f.err != nil {
			t.Fatalf("download: %v", f.err)
		}
		t.Logf("%d bytes intact after the proxy kill; stall %v", f.res.Bytes, stall.Round(100*time.Millisecond))
		return cellResult{Bytes: f.res.Bytes, FirstByte: f.res.FirstByte, Total: f.res.Total,
			MBps: f.res.Throughput() / 1e6, Stall: stall}
	})
	if len(results) > 0 {
		t.Logf("failover (serving proxy SIGKILLed at 30 %%, a new one started at once):\n%s", formatMatrix(results, true))
	}
}

// covertFileSize is what each covert-DTLS chain downloads: enough for
// many DataChannel messages after the shaped handshake.
const covertFileSize = 5 << 20

// covertRoles are the chains of TestCovertChains: Snowflake's client with
// Flurry's proxy, and Flurry's client with Snowflake's proxy (broker and
// relay Flurry's), so that each implementation's shaped ClientHello (the
// proxy's, as DTLS client) and its DTLS server (the client's) meet the
// other's.
func covertRoles() []Roles {
	return []Roles{
		{Broker: Flurry, Proxy: Flurry, Client: Snowflake, Relay: Flurry},
		{Broker: Flurry, Proxy: Snowflake, Client: Flurry, Relay: Flurry},
	}
}

// TestCovertChains runs the mixed chains with the same -covertdtls-config
// on client and proxy, in every mode but disable (which TestChains runs
// for the client; Snowflake's proxy defaults to randomizemimic there), and
// checks the download's SHA-256.
func TestCovertChains(t *testing.T) {
	for _, mode := range []string{"mimic", "randomize", "randomizemimic"} {
		t.Run(mode, func(t *testing.T) {
			for _, roles := range covertRoles() {
				t.Run(roles.String(), func(t *testing.T) {
					if !inNetns(t, nil) {
						return
					}
					ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
					defer cancel()
					c := startChainConfig(t, ctx, ChainConfig{Roles: roles, FileSize: covertFileSize, Covert: mode})
					res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, nil)
					if err != nil {
						t.Fatalf("download: %v", err)
					}
					t.Logf("%d bytes intact, %.2f MB/s", res.Bytes, res.Throughput()/1e6)
				})
			}
		})
	}
}

// TestMatrix checks the chains: ten distinct ones, the two pure ones, and
// eight with exactly one role of the other implementation.
func TestMatrix(t *testing.T) {
	seen := map[Roles]bool{}
	swaps := 0
	for _, r := range Matrix() {
		seen[r] = true
		n := 0
		for _, i := range []Impl{r.Broker, r.Proxy, r.Client, r.Relay} {
			n += int(i)
		}
		if n == 1 || n == 3 {
			swaps++
		} else if n != 0 && n != 4 {
			t.Errorf("%s is not a one-role swap", r)
		}
	}
	if len(seen) != 10 || swaps != 8 || !seen[Roles{}] || !seen[Roles{Snowflake, Snowflake, Snowflake, Snowflake}] {
		t.Errorf("matrix %v", Matrix())
	}
}
