// Command httpcmp-broker serves a broker of the default configuration
// (plain HTTP, no rate limits, no geoip, as flurry-broker -disable-tls
// -disable-geoip -disable-rate-limits) through one of the HTTP servers of
// package httpcmp, for flurry-loadgen broker to measure
// (scripts/httpcmp.sh, docs/performance.md).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/testkit/httpcmp"
)

func main() {
	var addr, server string
	fs := flag.NewFlagSet("httpcmp-broker", flag.ExitOnError)
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "`address` to listen on")
	fs.StringVar(&server, "server", httpcmp.ServerFlurry, fmt.Sprintf("HTTP `server`, one of %q", httpcmp.Servers))
	_ = fs.Parse(os.Args[1:]) // ExitOnError: exits on a bad flag
	if err := run(addr, server); err != nil {
		fmt.Fprintln(os.Stderr, "httpcmp-broker:", err)
		os.Exit(1)
	}
}

func run(addr, server string) error {
	idlemem.Start(2 * time.Second) // as flurry-broker
	idlemem.FollowAllocation(250 * time.Millisecond)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	b, err := broker.New(broker.Config{ListenAddr: addr, DisableRateLimits: true, Logger: log})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	log.Warn("serving", "addr", ln.Addr().String(), "server", server)
	return httpcmp.ServeBroker(ctx, b, ln, server, log)
}
