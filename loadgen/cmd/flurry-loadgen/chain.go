package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/report"
)

func chainFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var cfg chainload.ChainConfig
	fs.StringVar(&cfg.SOCKSAddr, "socks", "127.0.0.1:1080", "SOCKS5 proxy address (the chain's client)")
	fs.StringVar(&cfg.SOCKSUsername, "socks-user", "", "SOCKS5 username (RFC 1929; tor passes bridge arguments this way)")
	fs.StringVar(&cfg.SOCKSPassword, "socks-pass", "", "SOCKS5 password")
	fs.StringVar(&cfg.Mode, "mode", "", "get (HTTP GET of -url), read (read -bytes from a source -target) or echo (write and read back -bytes); default get with -url, else read")
	fs.StringVar(&cfg.URL, "url", "", "http:// URL to GET through the proxy")
	fs.StringVar(&cfg.Target, "target", "127.0.0.1:9000", "host:port the proxy connects to in read and echo modes")
	fs.Int64Var(&cfg.Bytes, "bytes", 0, "bytes per request (read, echo: default 10 MiB; get: at most this much of each body, 0 = all)")
	fs.IntVar(&cfg.Requests, "requests", chainload.DefaultChainRequests, "total requests")
	fs.IntVar(&cfg.Concurrency, "concurrency", 1, "requests at once")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", chainload.DefaultChainRequestTimeout, "bound on each request")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.AllowNonLoopback = c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := chainload.RunChain(ctx, cfg)
		if r.SOCKS != "" {
			res.Chain = &r
		}
		return err
	}
}

func targetFlags(fs *flag.FlagSet, c *common, stdout io.Writer) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg      tcptarget.Config
		duration time.Duration
	)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:9000", "listen address")
	fs.StringVar(&cfg.Mode, "mode", tcptarget.Echo, "echo, sink, source or random (a fixed pseudo-random stream, for attack relay-sessions -honest-bytes)")
	fs.DurationVar(&duration, "duration", 10*time.Minute, "serve this long, then exit")
	return func(ctx context.Context, _ *report.Result, _ io.Writer) error {
		cfg.AllowNonLoopback = c.allowNonLoopback
		t, err := tcptarget.Start(cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s target listening on %s for %v (give the relay -forward %s)\n", cfg.Mode, t.Addr(), duration, t.Addr())
		timer := time.NewTimer(duration)
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		timer.Stop()
		t.Close()
		s := t.Stats()
		fmt.Fprintf(stdout, "target: %d connections, %d bytes in, %d bytes out\n", s.Conns, s.BytesIn, s.BytesOut)
		return nil
	}
}
