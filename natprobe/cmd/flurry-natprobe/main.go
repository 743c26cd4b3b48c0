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

// options are the flags beyond natprobe.Config.
type options struct {
	tls                                 servercmd.TLSFlags
	unsafeLogging, verbose, showVersion bool
}

func parseFlags(fs *flag.FlagSet, args []string) (natprobe.Config, *options, error) {
	var c natprobe.Config
	var o options
	fs.StringVar(&c.ListenAddr, "addr", natprobe.DefaultListenAddr, "listen `address`")
	o.tls.Register(fs, "acme-cert-cache")
	fs.Func("stun", "comma-separated STUN `URLs` so that answers carry the probe's NATed address; empty: host candidates only",
		func(s string) error { c.STUNURLs = commalist.Split(s); return nil })
	fs.BoolVar(&c.KeepLocalAddresses, "keep-local-addresses", false, "keep private candidates in answers (lab setups)")
	fs.BoolVar(&c.LoopbackOnly, "loopback-only", false, "gather WebRTC candidates on loopback only (tests and the demo on one machine)")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from the log")
	fs.IntVar(&c.MaxConcurrent, "max-probes", natprobe.DefaultMaxConcurrent, "most probes in progress at once; more get 503")
	fs.IntVar(&c.MaxPerAddress, "max-probes-per-address", natprobe.DefaultMaxPerAddress, "most probes in progress from one address (IPv6: one /64), the TCP peer's; more get 503")
	fs.BoolVar(&o.verbose, "verbose", false, "debug logging")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.showVersion {
		return c, &o, nil
	}
	return c, &o, o.tls.Check()
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-natprobe", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-natprobe"))
		return 0
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = servercmd.NewLogger(os.Stderr, servercmd.LogOptions{Level: level, Unsafe: o.unsafeLogging})
	t, err := o.tls.Setup(cfg.ListenAddr, cfg.Logger, "h2", "http/1.1")
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
