package demo_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
)

// The process-level tests run Flurry's binaries as separate processes on
// loopback. They take real seconds, so -short skips them. FLURRY_BIN_DIR
// names a directory of prebuilt binaries (make build's ./bin); otherwise
// they are built once, without -race, into a temporary directory.

var (
	buildOnce sync.Once
	buildDir  string
	buildBins demo.Binaries
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// binaries returns the binaries, building them on first use.
func binaries(tb testing.TB) demo.Binaries {
	tb.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv("FLURRY_BIN_DIR"); dir != "" {
			buildBins = demo.BinariesIn(dir)
			buildErr = buildBins.Check()
			return
		}
		buildDir, buildErr = os.MkdirTemp("", "flurry-e2e-bin-")
		if buildErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		t0 := time.Now()
		buildBins, buildErr = demo.Build(ctx, demo.BuildConfig{OutDir: buildDir})
		fmt.Fprintf(os.Stderr, "demo_test: built the binaries in %v\n", time.Since(t0).Round(time.Millisecond))
	})
	if buildErr != nil {
		tb.Fatalf("building the binaries: %v", buildErr)
	}
	return buildBins
}

func skipShort(tb testing.TB) {
	tb.Helper()
	if testing.Short() {
		tb.Skip("process-level test: takes real seconds (skipped with -short)")
	}
}

// startCluster starts a cluster whose logs go to a test directory; on
// failure the end of every log is printed. Closing it must stop every
// process cleanly.
func startCluster(t *testing.T, cfg demo.Config) *demo.Cluster {
	t.Helper()
	cfg.Binaries = binaries(t)
	cfg.Dir = t.TempDir()
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, err := demo.Start(ctx, cfg)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
		if t.Failed() {
			dumpLogs(t, c)
		}
	})
	return c
}

func dumpLogs(t *testing.T, c *demo.Cluster) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(c.Dir(), "*.log"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 60 {
			lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-60)}, lines[len(lines)-60:]...)
		}
		t.Logf("==== %s\n%s", filepath.Base(f), strings.Join(lines, "\n"))
	}
}

// transfer is a download running in the background.
type transfer struct {
	progress demo.Progress
	done     chan struct{}
	res      demo.FetchResult
	err      error
}

func startTransfer(ctx context.Context, c *demo.Cluster) *transfer {
	tr := &transfer{done: make(chan struct{})}
	go func() {
		defer close(tr.done)
		tr.res, tr.err = demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, &tr.progress)
	}()
	return tr
}

// waitBytes waits until the transfer has received at least n bytes. It
// fails the test if the transfer ends first or ctx expires.
func (tr *transfer) waitBytes(t *testing.T, ctx context.Context, n int64) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for tr.progress.Bytes() < n {
		select {
		case <-tr.done:
			t.Fatalf("transfer ended after %d bytes before reaching %d: %v", tr.res.Bytes, n, tr.err)
		case <-ctx.Done():
			t.Fatalf("transfer at %d bytes, never reached %d: %v", tr.progress.Bytes(), n, ctx.Err())
		case <-tick.C:
		}
	}
}

// wait waits for the transfer and checks it delivered the whole file.
func (tr *transfer) wait(t *testing.T, c *demo.Cluster) demo.FetchResult {
	t.Helper()
	<-tr.done
	if tr.err != nil {
		t.Fatalf("transfer: %v", tr.err)
	}
	t.Logf("%s in %v (first byte %v), %s/s, SHA-256 matches",
		demo.FormatBytes(float64(tr.res.Bytes)), tr.res.Total.Round(time.Millisecond),
		tr.res.FirstByte.Round(time.Millisecond), demo.FormatBytes(tr.res.Throughput()))
	return tr.res
}

// transferUnderway starts the default cluster and a download through it,
// and returns once a tenth of the file has arrived; ctx bounds the test
// (2 min).
func transferUnderway(t *testing.T) (*demo.Cluster, context.Context, *transfer) {
	t.Helper()
	skipShort(t)
	c := startCluster(t, demo.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	tr := startTransfer(ctx, c)
	tr.waitBytes(t, ctx, demo.DefaultFileSize/10)
	return c, ctx, tr
}

// TestDownload runs the five binaries (broker, relay, NAT probe, two
// proxies, client) and downloads 20 MiB through the chain.
func TestDownload(t *testing.T) {
	skipShort(t)
	c := startCluster(t, demo.Config{NATProbe: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res := startTransfer(ctx, c).wait(t, c)
	if res.Bytes != demo.DefaultFileSize {
		t.Errorf("got %d bytes, want %d", res.Bytes, demo.DefaultFileSize)
	}
	if rv, ok := demo.RendezvousTime(c.Client.LogPath()); ok {
		t.Logf("rendezvous took %v", rv)
	}
	if n, err := demo.NewHTTPScraper().Metric(ctx, c.RelayMetricsURL, "flurry_relay_stream_bytes_total"); err != nil || n < demo.DefaultFileSize {
		t.Errorf("relay stream bytes = %v (%v), want at least %d", n, err, demo.DefaultFileSize)
	}
}

// TestShow: what flurry-demo shows of a cluster, a download through it
// and a held chain.
func TestShow(t *testing.T) {
	skipShort(t)
	const size = 1 << 20
	c := startCluster(t, demo.Config{NATProbe: true, FileSize: size})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out strings.Builder
	var cpu time.Duration
	show := demo.Show{Out: &out, CPU: func(int) (time.Duration, error) { cpu += time.Millisecond; return cpu, nil }}
	show.Cluster(c)
	if err := show.Download(ctx, c, size); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	show.Setup(size, 1, demo.DefaultProxies)
	held, stop := context.WithCancel(ctx)
	stop()
	if err := show.Hold(held, c); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"client  socks5://" + c.SOCKSAddr, "relay   " + c.RelayURL,
		"100.0%", "matches the file", "CPU per MB during the download      client ",
		"flurry-demo: one 1.00 MiB download", demo.LoadgenCommand(c.SOCKSAddr, c.Target.URL),
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the show lacks %q:\n%s", want, out.String())
		}
	}
}

// servingProxy waits until exactly one proxy carries the client.
func servingProxy(t *testing.T, ctx context.Context, c *demo.Cluster) *demo.Proxy {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if s := c.ServingProxies(ctx); len(s) == 1 {
			return s[0]
		} else if len(s) > 1 {
			t.Fatalf("%d proxies serve one client with -max 1", len(s))
		}
		select {
		case <-ctx.Done():
			t.Fatal("no proxy reports a connected client")
		case <-tick.C:
		}
	}
}

// TestServingProxyKilled kills (SIGKILL) the proxy carrying a transfer:
// the client moves to the other proxy and no byte is lost.
func TestServingProxyKilled(t *testing.T) {
	c, ctx, tr := transferUnderway(t)
	victim := servingProxy(t, ctx, c)
	at := tr.progress.Bytes()
	victim.Kill()
	t.Logf("killed %s at %d bytes", victim.Name(), at)
	tr.wait(t, c)
	if at >= demo.DefaultFileSize {
		t.Fatal("the transfer had finished before the kill; the test proved nothing")
	}
	if s := c.ServingProxies(ctx); len(s) == 1 && s[0] == victim {
		t.Error("the killed proxy still serves")
	}
}

// TestAllProxiesKilled kills every proxy mid-transfer and starts a new one
// 5 s later: the session waits for it and completes.
func TestAllProxiesKilled(t *testing.T) {
	c, ctx, tr := transferUnderway(t)
	for _, p := range c.Proxies() {
		p.Kill()
	}
	at := tr.progress.Bytes()
	t.Logf("killed every proxy at %d bytes", at)
	gap := time.NewTimer(5 * time.Second) // the scenario's outage, not a synchronisation
	select {
	case <-gap.C:
	case <-tr.done:
		t.Fatalf("transfer ended without any proxy: %v (%d bytes)", tr.err, tr.res.Bytes)
	}
	if got := tr.progress.Bytes(); got >= demo.DefaultFileSize {
		t.Fatalf("transfer completed without proxies (%d bytes)", got)
	}
	p, err := c.StartProxy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("started %s at %d bytes", p.Name(), tr.progress.Bytes())
	tr.wait(t, c)
}

// TestBrokerRestart restarts the broker during a transfer: the transfer
// does not need it and continues; a new session rendezvous with the new
// broker.
func TestBrokerRestart(t *testing.T) {
	c, ctx, tr := transferUnderway(t)
	if err := c.Broker.Restart(ctx, 5*time.Second); err != nil {
		t.Fatalf("restarting the broker: %v", err)
	}
	at := tr.progress.Bytes()
	t.Logf("broker restarted (pid %d) at %d bytes", c.Broker.PID(), at)
	tr.wait(t, c)
	if at >= demo.DefaultFileSize {
		t.Fatal("the transfer had finished before the broker was back; the test proved nothing")
	}

	// A new SOCKS connection is a new session: a new rendezvous, with the
	// restarted broker.
	second := startTransfer(ctx, c)
	second.wait(t, c)
}

// TestCleanShutdown stops each process with SIGTERM after some traffic: each
// must exit with status 0 within a few seconds and leave no process of its
// group behind.
func TestCleanShutdown(t *testing.T) {
	skipShort(t)
	c := startCluster(t, demo.Config{NATProbe: true, FileSize: 1 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	startTransfer(ctx, c).wait(t, c)
	// A second transfer is left running while the client stops.
	tr := startTransfer(ctx, c)
	tr.waitBytes(t, ctx, 1)
	for _, p := range c.Processes() {
		t0 := time.Now()
		err := p.Stop(5 * time.Second)
		switch {
		case errors.Is(err, childproc.ErrStopTimeout):
			t.Errorf("%s did not exit within 5 s of SIGTERM: %v", p.Name(), err)
		case err != nil:
			t.Errorf("%s: %v", p.Name(), err)
		default:
			t.Logf("%s exited cleanly %v after SIGTERM", p.Name(), time.Since(t0).Round(time.Millisecond))
		}
	}
	<-tr.done
}
