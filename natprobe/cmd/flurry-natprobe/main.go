// Command flurry-natprobe is a NAT test peer for Snowflake and Flurry
// proxies: an HTTP(S) server with Snowflake's /probe endpoint that answers
// a proxy's WebRTC offer and reports, by whether the connection opens,
// whether the proxy's NAT is restrictive. It is only truthful when it runs
// behind a restrictive NAT itself; see docs/proxy.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/natprobe"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("flurry-natprobe", flag.ContinueOnError)
	var (
		cfg natprobe.Config
		tf  servercmd.TLSFlags
	)
	fs.StringVar(&cfg.ListenAddr, "addr", natprobe.DefaultListenAddr, "listen `address`")
	tf.Register(fs, "acme-cert-cache")
	stun := fs.String("stun", "", "comma-separated STUN `URLs` so that answers carry the probe's NATed address; empty: host candidates only")
	fs.BoolVar(&cfg.KeepLocalAddresses, "keep-local-addresses", false, "keep private candidates in answers (lab setups)")
	fs.BoolVar(&cfg.LoopbackOnly, "loopback-only", false, "gather WebRTC candidates on loopback only (tests and the demo on one machine)")
	unsafeLogging := fs.Bool("unsafe-logging", false, "do not scrub IP addresses from the log")
	fs.IntVar(&cfg.MaxConcurrent, "max-probes", natprobe.DefaultMaxConcurrent, "most probes in progress at once; more get 503")
	fs.IntVar(&cfg.MaxPerAddress, "max-probes-per-address", natprobe.DefaultMaxPerAddress, "most probes in progress from one address (IPv6: one /64), the TCP peer's; more get 503")
	verbose := fs.Bool("verbose", false, "debug logging")
	showVersion := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Println(version.Line("flurry-natprobe"))
		return 0
	}
	if err := tf.Check(); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
		return 2
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = servercmd.NewLogger(os.Stderr, servercmd.LogOptions{Level: level, Unsafe: *unsafeLogging})
	cfg.STUNURLs = commalist.Split(*stun)
	t, err := tf.Setup(cfg.ListenAddr, cfg.Logger, "h2", "http/1.1")
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
		return 1
	}
	defer t.Close()
	cfg.TLSConfig = t.Config
	probes, err := natprobe.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := probes.Run(ctx); err != nil {
		cfg.Logger.Error("natprobe stopped", "err", err)
		return 1
	}
	return 0
}
