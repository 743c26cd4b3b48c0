package demo_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/testkit/tortest"
)

// TestTorBackendsThroughFlurry: one standalone flurry-relay in front of two
// tor instances of one bridge (shared identity keys, each its own ExtORPort
// and cookie: no HAProxy, no shared cookie), in the private Tor network. A
// tor client bootstraps through Flurry and downloads; then the instance
// carrying its connection is killed: the relay must take it out, the
// client's tor reconnects through the relay to the other instance and
// downloads again over new circuits, and the relay's metrics say so.
func TestTorBackendsThroughFlurry(t *testing.T) {
	skipWithoutTorNetwork(t)
	bins := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	target, network := startTorNetwork(t, ctx, 1<<20)

	dir := t.TempDir()
	backends, err := tortest.WriteTorBackends(ctx, dir, tortest.DefaultTorPath, 2, network.Lines...)
	if err != nil {
		t.Fatal(err)
	}
	tors := map[string]*childproc.Process{}
	for _, b := range backends {
		p, err := childproc.Start(ctx, childproc.Config{
			Name: "tor-" + b.Name, Path: tortest.DefaultTorPath, LogPath: filepath.Join(dir, b.Name+"-tor.log"),
			Supervisor: "demo",
			Args:       b.Args, Ready: b.Ready(), ReadyTimeout: 60 * time.Second,
		})
		if err != nil {
			t.Fatalf("tor %s: %v", b.Name, err)
		}
		tors[b.Name] = p
		t.Cleanup(func() {
			if p.Running() {
				stopTor(t, p)
			}
		})
	}
	fp, err := backends[0].Fingerprint()
	if err != nil {
		t.Fatal(err)
	}
	if fp2, err := backends[1].Fingerprint(); err != nil || fp2 != fp {
		t.Fatalf("the instances do not share the identity: %s and %s (%v)", fp, fp2, err)
	}

	addrs, err := demo.FreeAddrs(2)
	if err != nil {
		t.Fatal(err)
	}
	metricsURL := "http://" + addrs[1] + "/metrics"
	relayLog := filepath.Join(dir, "relay.log")
	args := []string{"-addr", addrs[0], "-disable-tls", "-metrics-addr", addrs[1], "-unsafe-logging", "-log", relayLog}
	for _, b := range backends {
		args = append(args, "-backend", b.BackendFlag())
	}
	relay, err := childproc.Start(ctx, childproc.Config{
		Name: "flurry-relay", Path: bins.Relay, Args: args, LogPath: filepath.Join(dir, "relay.out"),
		Supervisor: "demo",
		Ready:      demo.HTTPReady(metricsURL, 200),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopClean(t, relay)
		if t.Failed() {
			for _, f := range []string{relayLog, backends[0].NoticeLog, backends[1].NoticeLog} {
				b, _ := os.ReadFile(f)
				t.Logf("==== %s\n%s", f, tail(string(b), 40))
			}
		}
	})

	chain := startTorChain(t, ctx, torChainOptions{
		network:  network.Lines,
		external: &externalBridge{relayURL: "ws://" + addrs[0] + "/", fingerprint: fp},
	})
	chain.waitBootstrap(t, ctx, 100)
	if _, err := demo.FetchTarget(ctx, chain.client.SOCKSAddr, target, nil); err != nil {
		t.Fatalf("download through tor and Flurry: %v", err)
	}

	scraper := demo.NewHTTPScraper()
	defer scraper.Close()
	metric := func(name, backend string) float64 {
		t.Helper()
		v, err := scraper.Metric(ctx, metricsURL, fmt.Sprintf("flurry_relay_%s{backend=%q}", name, backend))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	// The client's tor holds one connection to the bridge: one stream on
	// one instance. That instance dies.
	var victim, survivor string
	for _, b := range backends {
		if metric("backend_streams", b.Name) > 0 {
			victim = b.Name
		} else {
			survivor = b.Name
		}
	}
	if victim == "" || survivor == "" {
		t.Fatalf("want the client's connection on exactly one instance: b1 %v, b2 %v streams",
			metric("backend_streams", "b1"), metric("backend_streams", "b2"))
	}
	before := metric("backend_streams_total", survivor)
	t.Logf("killing %s, which carries the client's connection", victim)
	tors[victim].Kill()

	// New circuits: a new connection from the client's tor, through the
	// relay, to the surviving instance.
	// The client's tor may first try the circuit it had, which died with
	// the instance, and refuse that request; it builds a new one over a new
	// connection, so a request is retried until one succeeds, as a user's
	// would be.
	var res demo.FetchResult
	for attempt := 1; ; attempt++ {
		var err error
		if res, err = demo.FetchTarget(ctx, chain.client.SOCKSAddr, target, nil); err == nil {
			break
		}
		if attempt == 30 || ctx.Err() != nil {
			t.Fatalf("download after %s died, attempt %d: %v", victim, attempt, err)
		}
		t.Logf("download after %s died, attempt %d: %v; retrying", victim, attempt, err)
		time.Sleep(2 * time.Second) // tor's own reconnection pace, not a synchronisation
	}
	t.Logf("%s downloaded after %s died, in %v", demo.FormatBytes(float64(res.Bytes)), victim, res.Total.Round(time.Millisecond))
	// The relay finds it dead when a stream or its health check (every
	// 10 s) tries it.
	deadline := time.Now().Add(60 * time.Second)
	for metric("backend_up", victim) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("flurry_relay_backend_up{backend=%q} still 1 long after it died", victim)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if f := metric("backend_failures_total", victim); f < 1 {
		t.Errorf("flurry_relay_backend_failures_total{backend=%q} = %v, want at least 1", victim, f)
	}
	if after := metric("backend_streams_total", survivor); after <= before {
		t.Errorf("the surviving instance took no new stream (%v before, %v after)", before, after)
	}
	if up := metric("backend_up", survivor); up != 1 {
		t.Errorf("flurry_relay_backend_up{backend=%q} = %v, want 1", survivor, up)
	}
	if lines := tortest.GrepFile(relayLog, "backend down"); !containsAny(lines, victim) {
		t.Errorf("the relay did not log %s going down (lines: %q)", victim, lines)
	}
}
