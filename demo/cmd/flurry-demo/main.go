// Command flurry-demo builds Flurry and runs the whole system on loopback: a
// broker, a relay in standalone mode forwarding to a built-in HTTP server, a
// NAT probe, two proxies and a client in SOCKS mode. It then downloads a
// generated file through client, proxy and relay, shows progress, prints
// what happened (rendezvous time, time to first byte, throughput, SHA-256
// check) and stops everything it started, also on Ctrl-C. It needs no flags,
// no network and no root: `make demo`.
//
// With -hold it keeps the chain running after the download (with -hold
// -size 0, instead of it), prints the client's SOCKS address, the target URL
// and a ready-to-paste `flurry-loadgen chain` command, and stops everything
// on Ctrl-C or SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/loadgen"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("flurry-demo", flag.ContinueOnError)
	var (
		binDir    = fs.String("bin", "", "use the binaries in this `directory` (as `make build` leaves them in ./bin) instead of building")
		size      = fs.Int64("size", demo.DefaultFileSize, "size of the file to download, in `bytes` (0 with -hold: serve the default size, download nothing)")
		proxies   = fs.Int("proxies", demo.DefaultProxies, "number of proxies")
		clientMax = fs.Int("max", 1, "proxies the client uses at once (its -max)")
		keep      = fs.Bool("keep", false, "keep the work directory with the logs after the demo")
		verbose   = fs.Bool("v", false, "print every orchestration step")
		brokers   = fs.Int("brokers", 0, "run this many brokers as one cluster: a nats-server, the brokers joined through it (-nats) and HAProxy in front\n(round robin, health checks on /healthz); needs Debian's nats-server and haproxy. 0: one broker alone")
		showVer   = fs.Bool("version", false, "print the version and exit")
		hold      = fs.Bool("hold", false, "after the download (with -size 0: instead of it) keep the chain running, print the SOCKS address, the target URL and a\nflurry-loadgen chain command to measure it, until Ctrl-C or SIGTERM; then stop everything")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-demo [flags]\n\nRuns broker, relay, NAT probe, proxies and client on loopback and downloads a file through them.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVer {
		fmt.Println(version.Line("flurry-demo"))
		return 0
	}
	if *brokers < 0 || *brokers > 16 {
		fmt.Fprintln(os.Stderr, "flurry-demo: -brokers must be between 0 and 16")
		return 2
	}
	if *brokers > 0 {
		for _, tool := range []struct{ path, name string }{{demo.NATSServerPath, "nats-server"}, {demo.HAProxyPath, "haproxy"}} {
			if _, err := demo.FindTool(tool.path, tool.name, tool.name); err != nil {
				fmt.Fprintf(os.Stderr, "flurry-demo: -brokers %d needs %v\n", *brokers, err)
				return 1
			}
		}
	}
	if *size < 0 || *size > 512<<20 || (*size == 0 && !*hold) || *proxies < 1 || *clientMax < 1 {
		fmt.Fprintln(os.Stderr, "flurry-demo: -size must be between 1 and 536870912 (0 only with -hold); -proxies and -max must be positive")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	dir, err := os.MkdirTemp("", "flurry-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-demo:", err)
		return 1
	}
	failed := true
	defer func() {
		if *keep || failed {
			fmt.Printf("\nLogs are in %s\n", dir)
			return
		}
		os.RemoveAll(dir)
	}()

	level := slog.LevelInfo
	if !*verbose {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	var bins demo.Binaries
	if *binDir != "" {
		bins = demo.BinariesIn(*binDir)
		if err := bins.Check(); err != nil {
			fmt.Fprintln(os.Stderr, "flurry-demo:", err)
			return 1
		}
	} else {
		step("Building the binaries (go build, no -race)")
		t0 := time.Now()
		bins, err = demo.Build(ctx, demo.BuildConfig{OutDir: filepath.Join(dir, "bin")})
		if err != nil {
			fmt.Fprintln(os.Stderr, "flurry-demo:", err)
			return 1
		}
		done("built in %v", since(t0))
	}

	brokerText := "broker"
	if *brokers > 0 {
		brokerText = fmt.Sprintf("nats-server, %d brokers on it, HAProxy in front", *brokers)
	}
	step("Starting target, relay, %s, NAT probe, %d proxies and the client on 127.0.0.1", brokerText, *proxies)
	t0 := time.Now()
	cluster, err := demo.Start(ctx, demo.Config{
		Binaries:  bins,
		Dir:       dir,
		Proxies:   *proxies,
		FileSize:  *size, // 0 (only with -hold): DefaultFileSize
		NATProbe:  true,
		ClientMax: *clientMax,
		Brokers:   *brokers,
		Logger:    logger,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-demo:", err)
		return 1
	}
	defer func() {
		step("Stopping everything (SIGTERM, then SIGKILL after %v)", demo.DefaultStopTimeout)
		if err := cluster.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "flurry-demo: stop:", err)
			failed = true
			return
		}
		done("all processes exited cleanly")
	}()
	done("ready in %v", since(t0))
	if cluster.HAProxy != nil {
		fmt.Printf("    haproxy %s   (pid %d) -> %d brokers\n", cluster.BrokerURL, cluster.HAProxy.PID(), len(cluster.Brokers))
		for i, b := range cluster.Brokers {
			fmt.Printf("    %s http://%s/   (pid %d)\n", b.Name(), cluster.BrokerAddrs[i], b.PID())
		}
		fmt.Printf("    nats    %s   (pid %d)\n", cluster.NATSURL, cluster.NATS.PID())
	} else {
		fmt.Printf("    broker  %s   (pid %d)\n", cluster.BrokerURL, cluster.Broker.PID())
	}
	fmt.Printf("    relay   %s   (pid %d) -> target %s\n", cluster.RelayURL, cluster.Relay.PID(), cluster.Target.Addr)
	fmt.Printf("    natprobe %s   (pid %d)\n", cluster.NATProbeURL, cluster.NATProbe.PID())
	for _, p := range cluster.Proxies() {
		fmt.Printf("    %s (pid %d)\n", p.Name(), p.PID())
	}
	fmt.Printf("    client  socks5://%s   (pid %d)\n", cluster.SOCKSAddr, cluster.Client.PID())

	if *size > 0 {
		if code := download(ctx, cluster, *size); code != 0 {
			return code
		}
		printSetup(*size, *clientMax, *proxies)
	}
	if *hold {
		if code := holdChain(ctx, cluster); code != 0 {
			return code
		}
	}
	failed = false
	return 0
}

// download fetches the target's file through the chain, shows progress and
// prints what happened. It returns the exit status.
func download(ctx context.Context, cluster *demo.Cluster, size int64) int {
	step("Downloading %s (%s) through client -> proxy -> relay -> target", cluster.Target.URL, demo.FormatBytes(float64(size)))
	var progress demo.Progress
	cpuBefore := cpuTimes(cluster.Processes())
	type result struct {
		res demo.FetchResult
		err error
	}
	resc := make(chan result, 1)
	fetchStart := time.Now()
	fctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	go func() {
		res, err := demo.FetchTarget(fctx, cluster.SOCKSAddr, cluster.Target, &progress)
		resc <- result{res, err}
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var r result
	var servedBy []string // proxies seen carrying the client, in order
	for waiting := true; waiting; {
		select {
		case r = <-resc:
			waiting = false
		case <-tick.C:
			for _, p := range cluster.ServingProxies(fctx) {
				if !slices.Contains(servedBy, p.Name()) {
					servedBy = append(servedBy, p.Name())
				}
			}
		}
		printProgress(os.Stdout, progress.Bytes(), size, time.Since(fetchStart))
	}
	fmt.Println()
	if r.err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "flurry-demo: interrupted")
		} else {
			fmt.Fprintln(os.Stderr, "flurry-demo: download failed:", r.err)
		}
		return 1
	}

	step("What happened")
	if rv, ok := demo.RendezvousTime(cluster.Client.LogPath()); ok {
		fmt.Printf("    rendezvous (offer to broker answer)  %v\n", rv.Round(time.Millisecond))
	}
	// The client grants a SOCKS connection once its session has a proxy:
	// broker rendezvous, WebRTC (ICE, DTLS, SCTP) and the relay's WebSocket.
	fmt.Printf("    rendezvous + WebRTC (SOCKS grant)   %v\n", r.res.Granted.Round(time.Millisecond))
	fmt.Printf("    time to first byte                  %v\n", r.res.FirstByte.Round(time.Millisecond))
	fmt.Printf("    whole transfer                      %v\n", r.res.Total.Round(time.Millisecond))
	fmt.Printf("    throughput                          %s/s\n", demo.FormatBytes(r.res.Throughput()))
	fmt.Printf("    SHA-256                             %x  matches the file\n", r.res.SHA256)
	if len(servedBy) > 0 {
		fmt.Printf("    carried by                          %s\n", strings.Join(servedBy, ", "))
	}
	printCPU(cluster.Processes(), cpuBefore, size)
	return 0
}

// printSetup names what the figures above were measured on, so that they
// are not taken for the side-by-side benchmark's.
func printSetup(size int64, clientMax, proxies int) {
	fmt.Printf("    set-up                              flurry-demo: one %s download, client -max %d, %d proxies polling,\n"+
		"                                        -loopback-only, Flurry's own flags, all processes on this machine's shared\n"+
		"                                        cores; whole transfer includes the rendezvous. Not the side-by-side\n"+
		"                                        benchmark (flurry-loadgen sidebyside, docs/performance.md)\n",
		demo.FormatBytes(float64(size)), clientMax, proxies)
}

// holdChain keeps the chain running until ctx ends (Ctrl-C, SIGTERM) and
// prints how to measure it with flurry-loadgen. It returns 1 if one of the
// processes exits on its own meanwhile, else 0.
func holdChain(ctx context.Context, cluster *demo.Cluster) int {
	step("Holding the chain until Ctrl-C or SIGTERM")
	fmt.Printf("    SOCKS5 proxy   %s\n", cluster.SOCKSAddr)
	fmt.Printf("    target URL     %s (%s, SHA-256 %s)\n", cluster.Target.URL,
		demo.FormatBytes(float64(cluster.Target.Size)), cluster.Target.SHA256Hex())
	fmt.Printf("    measure it with\n        %s\n", loadgenCommand(cluster.SOCKSAddr, cluster.Target.URL))
	fmt.Printf("    (every SOCKS connection is a session of its own: -concurrency N runs N sessions at once)\n")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Println()
			return 0
		case <-tick.C:
			for _, p := range cluster.Processes() {
				select {
				case <-p.Done():
					fmt.Fprintf(os.Stderr, "flurry-demo: %s exited while holding: %v\n%s\n", p.Name(), p.ExitErr(), p.LogTail(10))
					return 1
				default:
				}
			}
		}
	}
}

// loadgenCommand is a ready-to-paste flurry-loadgen command that fetches url
// through the SOCKS5 proxy at socks.
func loadgenCommand(socks, url string) string {
	return fmt.Sprintf("go run ./loadgen/cmd/flurry-loadgen chain -socks %s -url %s -requests 5 -concurrency 1 -json chain.json", socks, url)
}

func step(format string, args ...any) {
	fmt.Printf("==> "+format+"\n", args...)
}

func done(format string, args ...any) {
	fmt.Printf("    "+format+"\n", args...)
}

func since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}

func printProgress(w io.Writer, n, total int64, elapsed time.Duration) {
	const width = 30
	frac := float64(n) / float64(total)
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	fmt.Fprintf(w, "\r    [%s] %5.1f%%  %s / %s  %s/s   ", bar, 100*frac, demo.FormatBytes(float64(n)), demo.FormatBytes(float64(total)), demo.FormatBytes(rate))
}

// cpuTimes reads the CPU time each process has used so far (Linux /proc;
// processes it cannot read are left out).
func cpuTimes(procs []*demo.Process) map[string]time.Duration {
	out := make(map[string]time.Duration, len(procs))
	for _, p := range procs {
		if s, err := loadgen.ReadProc(p.PID()); err == nil {
			out[p.Name()] = s.CPU
		}
	}
	return out
}

// printCPU reports the CPU time each process spent during the download, per
// megabyte carried: what the chain costs, role by role.
func printCPU(procs []*demo.Process, before map[string]time.Duration, size int64) {
	after := cpuTimes(procs)
	mb := float64(size) / 1e6
	fmt.Printf("    CPU per MB during the download      ")
	first := true
	for _, p := range procs {
		b, okb := before[p.Name()]
		a, oka := after[p.Name()]
		if !okb || !oka {
			continue
		}
		if !first {
			fmt.Printf(", ")
		}
		first = false
		fmt.Printf("%s %.1f ms", p.Name(), float64((a-b).Milliseconds())/mb)
	}
	fmt.Println()
}
