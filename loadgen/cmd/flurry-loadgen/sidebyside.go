package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/report"
)

// implFlag collects -impl NAME=PREFIX flags.
type implFlag []chainproc.Implementation

func (f *implFlag) String() string {
	names := make([]string, len(*f))
	for i, im := range *f {
		names[i] = im.Name
	}
	return strings.Join(names, ",")
}

func (f *implFlag) Set(s string) error {
	name, prefix, ok := strings.Cut(s, "=")
	if !ok || name == "" || prefix == "" {
		return fmt.Errorf("want NAME=PREFIX, got %q", s)
	}
	im, err := chainproc.ImplementationFromPrefix(name, prefix)
	if err != nil {
		return err
	}
	*f = append(*f, im)
	return nil
}

func sideBySideFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg   chainload.SideBySideConfig
		impls implFlag
	)
	fs.Var(&impls, "impl", "an implementation to measure, as NAME=PREFIX: the binaries PREFIXbroker, PREFIXproxy,\n"+
		"PREFIXclient and PREFIXserver (or PREFIXrelay), run with Snowflake's flag names; repeat for each\n"+
		"(e.g. -impl snowflake=out/snowflake/ -impl flurry=bin/flurry-); ratios are to the first")
	fs.IntVar(&cfg.Downloads, "downloads", chainload.DefaultSideBySideDownloads, "downloads per implementation, alternating")
	fs.Int64Var(&cfg.Bytes, "bytes", chainload.DefaultSideBySideBytes, "bytes per download")
	fs.DurationVar(&cfg.PauseThreshold, "pause", chainload.DefaultPauseThreshold, "a gap between reads longer than this counts as a pause")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", chainload.DefaultSideBySidePoll, "the proxies' -poll-interval")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", chainload.DefaultChainRequestTimeout, "bound on each download")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the chains' logs and state (default: a new temporary directory, kept)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Implementations = impls
		if cfg.Dir == "" {
			dir, err := os.MkdirTemp("", "flurry-sidebyside-")
			if err != nil {
				return err
			}
			cfg.Dir = dir
		}
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		fmt.Fprintf(os.Stderr, "logs and state in %s\n", cfg.Dir)
		r, err := chainload.RunSideBySide(ctx, cfg)
		if len(r.Downloads) > 0 {
			res.SideBySide = &r
		}
		return err
	}
}
