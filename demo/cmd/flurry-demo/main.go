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
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-demo", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-demo:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-demo"))
		return 0
	}
	if cfg.Brokers > 0 {
		for _, tool := range []struct{ path, name string }{{demo.NATSServerPath, "nats-server"}, {demo.HAProxyPath, "haproxy"}} {
			if _, err := demo.FindTool(tool.path, tool.name, tool.name); err != nil {
				fmt.Fprintf(os.Stderr, "flurry-demo: -brokers %d needs %v\n", cfg.Brokers, err)
				return 1
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if cfg.Dir, err = os.MkdirTemp("", "flurry-demo-"); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-demo:", err)
		return 1
	}
	failed := true
	defer func() {
		if o.keep || failed {
			fmt.Printf("\nLogs are in %s\n", cfg.Dir)
			return
		}
		os.RemoveAll(cfg.Dir)
	}()
	level := slog.LevelWarn
	if o.verbose {
		level = slog.LevelInfo
	}
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	show := demo.Show{Out: os.Stdout, CPU: cpuTime}
	if err := demonstrate(ctx, show, cfg, o); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-demo:", err)
		return 1
	}
	failed = false
	return 0
}

// demonstrate builds (or finds) the binaries, starts the cluster, shows
// the download and holds the chain as the flags say, and stops everything.
func demonstrate(ctx context.Context, show demo.Show, cfg demo.Config, o *options) (err error) {
	if o.binDir != "" {
		cfg.Binaries = demo.BinariesIn(o.binDir)
		if err := cfg.Binaries.Check(); err != nil {
			return err
		}
	} else {
		show.Step("Building the binaries (go build, no -race)")
		t0 := time.Now()
		if cfg.Binaries, err = demo.Build(ctx, demo.BuildConfig{OutDir: filepath.Join(cfg.Dir, "bin")}); err != nil {
			return err
		}
		show.Done("built in %v", demo.Since(t0))
	}
	brokers := "broker"
	if cfg.Brokers > 0 {
		brokers = fmt.Sprintf("nats-server, %d brokers on it, HAProxy in front", cfg.Brokers)
	}
	show.Step("Starting target, relay, %s, NAT probe, %d proxies and the client on 127.0.0.1", brokers, cfg.Proxies)
	t0 := time.Now()
	cluster, err := demo.Start(ctx, cfg) // FileSize 0 (only with -hold): DefaultFileSize
	if err != nil {
		return err
	}
	defer func() {
		show.Step("Stopping everything (SIGTERM, then SIGKILL after %v)", childproc.DefaultStopTimeout)
		if cerr := cluster.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("stop: %w", cerr))
			return
		}
		show.Done("all processes exited cleanly")
	}()
	show.Done("ready in %v", demo.Since(t0))
	show.Cluster(cluster)
	if cfg.FileSize > 0 {
		if err := show.Download(ctx, cluster, cfg.FileSize); err != nil {
			return err
		}
		show.Setup(cfg.FileSize, cfg.ClientMax, cfg.Proxies)
	}
	if o.hold {
		return show.Hold(ctx, cluster)
	}
	return nil
}

// cpuTime is the CPU time process pid has used so far (Linux /proc).
func cpuTime(pid int) (time.Duration, error) {
	s, err := procstat.ReadProc(pid)
	return s.CPU, err
}
