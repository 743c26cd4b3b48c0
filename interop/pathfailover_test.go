package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/netlab"
)

// failoverChains are the chains TestPathLabFailover runs: Snowflake's
// (its client with -max 1, as in its bridge lines) and Flurry's with one
// proxy at a time (the default), with one and a standby, and with two.
var failoverChains = []pathChain{
	{name: "snowflake", roles: Roles{Snowflake, Snowflake, Snowflake, Snowflake}},
	{name: "flurry", roles: Roles{}},
	{name: "flurry-standby", roles: Roles{}, standby: true},
	{name: "flurry-max2", roles: Roles{}, max: 2},
}

const (
	// failoverFileSize is each download's size; the serving proxy is
	// killed once failoverKillPercent of it has arrived, or failoverKillAfter
	// after the first byte on a path too slow for that.
	failoverFileSize    = 8 << 20
	failoverKillPercent = 30
	failoverKillAfter   = 5 * time.Second
	// failoverTimeout bounds a download after the kill: Flurry's chain
	// carries the rest within a minute on `mobile`, and Snowflake's client
	// waits 20 s of silence before it replaces a proxy.
	failoverTimeout = 2 * time.Minute
	// failoverGapStart bounds when the failover's gap begins: what was in
	// flight through the dead proxy arrives within it, and no proxy can
	// replace it before it (the dead-peer timeout is 1 s).
	failoverGapStart = time.Second
)

// failoverResult is one download through which the serving proxy was
// killed.
type failoverResult struct {
	Bytes int64
	// Intact: the whole file arrived, its digest right.
	Intact bool
	// KilledAt is when the serving proxy was killed, after the first byte;
	// KilledBytes what had arrived then.
	KilledAt    time.Duration
	KilledBytes int64
	// Gap is the failover's gap: the longest time without a byte that
	// began within failoverGapStart of the kill; Resumed the time from the
	// kill to its end (0 if bytes never came again).
	Gap, Resumed time.Duration
	// GapAfter is the longest gap after the kill, whenever it began, and
	// GapBefore the longest between the first byte and the kill: the
	// path's own stalls, for comparison.
	GapAfter, GapBefore time.Duration
	// Steps is Flurry's client's log after the kill: when it lost the proxy,
	// created the next offer, had the broker's answer and connected.
	Steps string
	Err   string
}

func (r failoverResult) String() string {
	s := fmt.Sprintf("gap %5.2fs", r.Gap.Seconds())
	if r.Resumed > 0 {
		s += fmt.Sprintf(" (bytes again %5.2fs after the kill)", r.Resumed.Seconds())
	} else {
		s += " (no byte after it)"
	}
	s += fmt.Sprintf(", killed %5.2fs after the first byte at %4.1f MB, longest gap before %5.2fs, after %5.2fs, ",
		r.KilledAt.Seconds(), float64(r.KilledBytes)/1e6, r.GapBefore.Seconds(), r.GapAfter.Seconds())
	if r.Intact {
		s += "intact"
	} else {
		s += fmt.Sprintf("%.1f of %.1f MB", float64(r.Bytes)/1e6, float64(failoverFileSize)/1e6)
	}
	if r.Steps != "" {
		s += "; client: " + r.Steps
	}
	if r.Err != "" && !r.Intact {
		s += " (" + r.Err + ")"
	}
	return s
}

// TestPathLabFailover kills the serving proxy during a download through
// each chain of failoverChains across the lab on each path profile, with
// a second proxy registered at the broker from the start, twice per
// profile. It asserts that Flurry's downloads finish intact after the kill
// (so that failover happened); the gaps are printed. With FLURRY_PATHLAB=1
// (`make pathlab-failover`); FLURRY_PATHLAB_PROFILES, FLURRY_PATHLAB_CHAINS
// (names of failoverChains) and FLURRY_PATHLAB_LOGS as for TestPathLab.
func TestPathLabFailover(t *testing.T) {
	if os.Getenv("FLURRY_PATHLAB") != "1" {
		t.Skip("FLURRY_PATHLAB=1 runs the path lab's failover (make pathlab-failover)")
	}
	testenv.Root(t, "the path lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	profiles, chains, withTCP := pathLabSelection(t, failoverChains)
	if withTCP && os.Getenv("FLURRY_PATHLAB_CHAINS") != "" {
		t.Fatal("FLURRY_PATHLAB_CHAINS: the failover runs no TCP download")
	}
	logs := os.Getenv("FLURRY_PATHLAB_LOGS")
	var report strings.Builder
	n := 0
	for _, profile := range profiles {
		path, err := netlab.ParseProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&report, "path %s (each direction)\n", profile)
		for round := range 2 {
			for _, c := range chains {
				n++
				dir := filepath.Join(t.TempDir(), "chain")
				if logs != "" {
					dir = filepath.Join(logs, fmt.Sprintf("%d-%s-%d-failover-%s", n, profile, round+1, c.name))
				}
				r := runFailoverCell(t, n, path, c, fl, sf, dir)
				line := fmt.Sprintf("  %d %-12s %s\n", round+1, c.name, r)
				report.WriteString(line)
				t.Logf("%s:%s", profile, line)
			}
		}
	}
	t.Logf("path lab failover, %d MiB per download, the serving proxy SIGKILLed at %d %% or %v after the first byte (date %s):\n%s",
		failoverFileSize>>20, failoverKillPercent, failoverKillAfter, time.Now().UTC().Format(time.DateOnly), report.String())
}

// TestPathLabStandbyFailover is CI's short form of TestPathLabFailover's
// flurry-standby cells: across the lab's `wifi` path, the proxy in use is
// SIGKILLed during a download through Flurry's chain with a standby proxy,
// and the download finishes intact (runFailoverCell fails the test
// otherwise). The cell has two proxies of one client each, so after the
// kill only the standby can carry it.
func TestPathLabStandbyFailover(t *testing.T) {
	testenv.Root(t, "the path lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	path, err := netlab.ParseProfile("wifi")
	if err != nil {
		t.Fatal(err)
	}
	r := runFailoverCell(t, 0, path, pathChain{name: "flurry-standby", standby: true}, fl, sf, filepath.Join(t.TempDir(), "chain"))
	t.Logf("wifi: %s", r)
}

// runFailoverCell downloads through chain c across a lab on path, with
// two proxies registered at the broker (each serving one client at most,
// so that with max=2 the client's two proxies are two processes), and
// SIGKILLs a proxy that serves
// the download once failoverKillPercent of it has arrived or
// failoverKillAfter has passed since its first byte.
func runFailoverCell(t *testing.T, n int, path netlab.Profile, c pathChain, fl demo.Binaries, sf SnowflakeBinaries, dir string) failoverResult {
	var r failoverResult
	fail := func(format string, args ...any) failoverResult {
		r.Err = fmt.Sprintf(format, args...)
		t.Errorf("%s: %s", c.name, r.Err)
		return r
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	lab, err := netlab.New(ctx, netlab.Config{Name: labName("pf", n), Up: path, Down: path, Seed: uint64(n)})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	var stunURL string
	if err := lab.Do(netlab.Outside, func() error {
		stunURL = stuntest.StartOn(t, lab.OutsideAddr(labSTUNAddr))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	chain, err := StartChain(ctx, ChainConfig{Roles: c.roles, Flurry: fl, Snowflake: sf, FileSize: failoverFileSize,
		STUN: stunURL, Lab: lab, Dir: dir, ClientMax: c.max, ClientStandby: c.standby, ProxyCapacity: 1})
	if err != nil {
		return fail("chain: %v", err)
	}
	defer chain.Close()
	if _, err := chain.StartProxy(ctx); err != nil {
		return fail("second proxy: %v", err)
	}

	var progress demo.Progress
	dctx, dcancel := context.WithCancel(ctx)
	defer dcancel()
	done := make(chan error, 1)
	go func() {
		done <- chain.InClient(func() error {
			_, err := demo.FetchTarget(dctx, chain.SOCKSAddr, chain.Target, &progress)
			return err
		})
	}()
	var before, after gapWatch
	stopBefore, stopAfter := make(chan struct{}), make(chan struct{})
	go before.watch(&progress, stopBefore)

	// Wait for the moment to kill.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var firstByte time.Time
	for progress.Bytes() < failoverFileSize*failoverKillPercent/100 &&
		(firstByte.IsZero() || time.Since(firstByte) < failoverKillAfter) {
		select {
		case err := <-done:
			close(stopBefore)
			return fail("the download ended before the kill (%d bytes): %v", progress.Bytes(), err)
		case <-ctx.Done():
			close(stopBefore)
			return fail("no time to kill: %d bytes", progress.Bytes())
		case now := <-tick.C:
			if firstByte.IsZero() && progress.Bytes() > 0 {
				firstByte = now
			}
		}
	}
	serving, err := chain.ServingProxies()
	if err == nil && len(serving) == 0 {
		err = errors.New("no proxy serves")
	}
	if err != nil {
		close(stopBefore)
		return fail("serving proxy: %v", err)
	}
	if err := serving[0].Signal(syscall.SIGKILL); err != nil {
		close(stopBefore)
		return fail("kill: %v", err)
	}
	killed := time.Now()
	close(stopBefore)
	go after.watch(&progress, stopAfter)
	r.KilledBytes, r.KilledAt = progress.Bytes(), killed.Sub(firstByte)
	r.GapBefore = before.longest(time.Time{}).length
	deadline := time.AfterFunc(failoverTimeout, dcancel)
	defer deadline.Stop()

	err = <-done
	close(stopAfter)
	r.Bytes = progress.Bytes()
	gap := after.longest(killed.Add(failoverGapStart))
	r.Gap, r.GapAfter = gap.length, after.longest(time.Time{}).length
	if !gap.resumed.IsZero() {
		r.Resumed = gap.resumed.Sub(killed)
	}
	if c.roles.Client == Flurry {
		r.Steps = clientSteps(chain.logPath("client-pt"), killed)
	}
	switch {
	case err == nil:
		r.Intact = true
	case errors.Is(err, demo.ErrChecksum):
		return fail("download: %v", err)
	case c.roles.Client == Flurry:
		return fail("download after the kill: %v (%d bytes)", err, r.Bytes)
	default:
		r.Err = err.Error() // Snowflake's client's own failover, reported
	}
	return r
}

// clientSteps reads Flurry's client's log (its -log file) for the first
// steps of its failover after killed, each as its time after killed.
func clientSteps(logPath string, killed time.Time) string {
	steps := []string{"proxy lost", "offer created", "broker answered", "proxy connected"}
	at := demo.EventTimes(logPath, killed, steps...)
	var parts []string
	for _, s := range steps {
		if t, ok := at[s]; ok {
			parts = append(parts, fmt.Sprintf("%s %+.2fs", s, t.Sub(killed).Seconds()))
		}
	}
	return strings.Join(parts, ", ")
}
