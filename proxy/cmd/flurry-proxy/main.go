// Command flurry-proxy is a Flurry proxy: it polls a broker for censored
// clients, accepts their WebRTC connections and relays them to a relay
// (a Snowflake bridge). Flags use Snowflake's names; they become a
// proxy.Config, and the main runs the proxy. See docs/proxy.md.
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
	"github.com/flurrypt/flurry/internal/pionruntime"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/proxy"
)

func main() {
	pionruntime.Apply(pionruntime.ProxyMaxProcs)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-proxy", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-proxy"))
		return 0
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	log, closeLog, err := servercmd.OpenLog(o.logFile, os.Stderr, servercmd.LogOptions{Level: level, Unsafe: o.unsafeLogging, LocalTime: o.logLocalTime})
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy: -log:", err)
		return 2
	}
	defer closeLog()
	cfg.Logger = log
	for name, v := range map[string]string{"geoipdb": o.geoipDB, "geoip6db": o.geoip6DB} {
		if v != "" {
			log.Info("flag ignored: accepted for compatibility with Snowflake only", "flag", "-"+name)
		}
	}
	p, err := proxy.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		log.Error("proxy stopped", "err", err)
		return 1
	}
	return 0
}
