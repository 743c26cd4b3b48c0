package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/browsertest"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// envSnowflakeWebext names a directory holding snowflake-webext's source
// (its repository's files): TestWebProxySideBySide builds Snowflake's badge
// from it and measures it beside Flurry's browser proxy.
const envSnowflakeWebext = "FLURRY_SNOWFLAKE_WEBEXT"

// snowflakeWebextFiles are the scripts snowflake-webext's make.js
// concatenates into the badge's embed.js, in its order, before
// init-badge.js.
var snowflakeWebextFiles = []string{"broker.js", "config.js", "proxypair.js", "snowflake.js", "ui.js", "util.js",
	"websocket.js", "shims.js"}

// buildSnowflakeBadge assembles snowflake-webext's badge as its make.js
// "build" task does (static files, embed.js = the scripts and
// init-badge.js, English only) and appends a configuration for the chain:
// its broker, relay and NAT probe instead of the Tor Project's, no public
// STUN server, the relay pattern of the chain, and a poll every 2 s (as
// the chain's broker asks of Flurry's proxies; this version polls at its
// own interval). Nothing else of its code is changed.
func buildSnowflakeBadge(t *testing.T, src string, c *Chain) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "snowflake-badge")
	if b, err := exec.Command("cp", "-r", filepath.Join(src, "static"), out).CombinedOutput(); err != nil {
		t.Fatalf("copy snowflake-webext's static files: %v: %s", err, b)
	}
	var js bytes.Buffer
	js.WriteString("const availableLangs = new Map([\n['en_US', 'English'],\n]);\n\n")
	for _, f := range append(snowflakeWebextFiles, "init-badge.js") {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatalf("snowflake-webext: %v", err)
		}
		js.Write(b)
	}
	fmt.Fprintf(&js, `
// The measurement's network (added by Flurry's interop test).
Config.prototype.brokerUrl = %q;
Config.prototype.defaultRelayAddr = %q;
Config.PROBEURL = %q;
Config.prototype.pcConfig = {iceServers: []};
Config.prototype.allowedRelayPattern = %q;
Config.prototype.defaultBrokerPollInterval = 2000;
Config.prototype.fastBrokerPollInterval = 2000;
`, c.BrokerURL, c.RelayURL, c.NATProbeURL, "^"+c.host())
	if err := os.WriteFile(filepath.Join(out, "embed.js"), js.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// browserProcesses returns the browser's process and all its descendants.
func browserProcesses(t *testing.T, root int) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	children := map[int][]int{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The fields after the command name, which is in parentheses.
		i := bytes.LastIndexByte(b, ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 {
			ppid, _ := strconv.Atoi(f[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out
}

// browserCPU is the CPU time the browser's processes have used so far
// (those alive now).
func browserCPU(t *testing.T, root int) time.Duration {
	t.Helper()
	var sum time.Duration
	for _, pid := range browserProcesses(t, root) {
		if s, err := procstat.ReadProc(pid); err == nil {
			sum += s.CPU
		}
	}
	return sum
}

// browserPSS is the proportional set size of the browser's processes, in
// bytes: its memory, shared pages counted once in all.
func browserPSS(t *testing.T, root int) int64 {
	t.Helper()
	var sum int64
	for _, pid := range browserProcesses(t, root) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(b)) {
			if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				sum += kb << 10
			}
		}
	}
	return sum
}

// TestWebProxySideBySide measures Flurry's browser proxy beside Snowflake's
// (snowflake-webext's badge, built from the source in $FLURRY_SNOWFLAKE_WEBEXT)
// in the same headless Chromium build and the same chain (Flurry's client,
// broker and relay): the 20 MiB download's time to first byte and MB/s,
// the CPU time of all the browser's processes per MB carried, and their
// memory (PSS, the largest seen during the download, and before it). Each proxy is run
// FLURRY_WEBPROXY_RUNS times (default 3), alternately. It is a
// measurement, not run by CI: make webproxy-sidebyside.
func TestWebProxySideBySide(t *testing.T) {
	src := os.Getenv(envSnowflakeWebext)
	if src == "" {
		t.Skip("set " + envSnowflakeWebext + " to snowflake-webext's source (make webproxy-sidebyside)")
	}
	src, err := filepath.Abs(src)
	if err != nil {
		t.Fatal(err)
	}
	os.Setenv(envSnowflakeWebext, src) // the child test process reads it
	runs := 3
	if s := os.Getenv("FLURRY_WEBPROXY_RUNS"); s != "" {
		if runs, err = strconv.Atoi(s); err != nil || runs < 1 {
			t.Fatalf("FLURRY_WEBPROXY_RUNS=%q", s)
		}
	}
	var mu sync.Mutex
	results := map[string][]cellResult{}
	for i := range runs {
		for _, impl := range []string{"flurry", "snowflake"} {
			t.Run(fmt.Sprintf("%s/%d", impl, i), func(t *testing.T) {
				if !inNetns(t, func(r cellResult) {
					mu.Lock()
					results[impl] = append(results[impl], r)
					mu.Unlock()
				}) {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
				defer cancel()
				report(t, measureBrowserProxy(t, ctx, impl, src))
			})
		}
	}
	if len(results) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-22s %10s %8s %16s %12s %12s\n", "browser proxy", "first byte", "MB/s", "CPU ms per MB", "memory MiB", "before MiB")
	for _, impl := range []string{"flurry", "snowflake"} {
		for _, r := range results[impl] {
			fmt.Fprintf(&b, "%-22s %10s %8.2f %16.1f %12.0f %12.0f\n", r.Name, r.FirstByte.Round(10*time.Millisecond), r.MBps,
				r.CPUPerMB["browser"], r.MemMiB["browser"], r.MemMiB["idle"])
		}
	}
	t.Logf("browser proxies in headless %s, %s, 20 MiB through Flurry's client, broker and relay:\n%s",
		chromiumVersion(t), time.Now().UTC().Format(time.DateOnly), b.String())
}

// chromiumVersion is what Debian's chromium says it is.
func chromiumVersion(t *testing.T) string {
	out, err := exec.Command(browsertest.ChromiumPath, "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}

// measureBrowserProxy runs one download through one browser proxy.
func measureBrowserProxy(t *testing.T, ctx context.Context, impl, src string) cellResult {
	c := startBrowserChainOnly(t, ctx, browserRoles()[0])
	var page string
	switch impl {
	case "flurry":
		page = serveDir(t, filepath.Join(c.build, "web")) + "index.html"
	default:
		page = serveDir(t, buildSnowflakeBadge(t, src, c.Chain)) + "embed.html"
	}
	tab, _ := browsertest.New(t, chromiumFlags(c.spki)...)
	if impl == "snowflake" {
		// The badge serves only once its visitor has switched it on.
		if _, err := chromedp.Call(tab, network.SetCookie, network.SetCookieParams{Name: "snowflake-allow", Value: "1", URL: page}); err != nil {
			t.Fatalf("switch the badge on: %v", err)
		}
	}
	browsertest.Run(t, tab, "open the proxy's page", chromedp.Navigate(page))
	root := chromedp.FromContext(tab).Browser.Process().Pid
	// Both proxies poll every 2 s; give each time to test its NAT and poll.
	time.Sleep(5 * time.Second)
	idle := browserPSS(t, root)
	var peak int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			if p := browserPSS(t, root); p > peak {
				peak = p
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	before := browserCPU(t, root)
	res, err := demo.FetchTarget(ctx, c.SOCKSAddr, c.Target, nil)
	cpu := browserCPU(t, root) - before
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("%s: download: %v", impl, err)
	}
	r := cellResult{
		Name: impl, Bytes: res.Bytes, FirstByte: res.FirstByte, Total: res.Total, MBps: res.Throughput() / 1e6,
		CPUPerMB: map[string]float64{"browser": float64(cpu.Milliseconds()) / (float64(res.Bytes) / 1e6)},
		MemMiB:   map[string]float64{"browser": float64(peak) / (1 << 20), "idle": float64(idle) / (1 << 20)},
	}
	t.Logf("%s: %d bytes intact, first byte after %v, %.2f MB/s, browser CPU %.1f ms/MB, PSS %.0f MiB",
		impl, res.Bytes, res.FirstByte.Round(time.Millisecond), r.MBps, r.CPUPerMB["browser"], r.MemMiB["browser"])
	return r
}
