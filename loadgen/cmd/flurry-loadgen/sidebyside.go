package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/report"
)

// implFlag collects -impl NAME=PREFIX flags, each parsed by parse:
// chainproc.ImplementationFromPrefix for whole chains,
// chainproc.ServerFromPrefix where only the relay is used.
type implFlag struct {
	list  []chainproc.Implementation
	parse func(name, prefix string) (chainproc.Implementation, error)
}

func (f *implFlag) String() string {
	names := make([]string, len(f.list))
	for i, im := range f.list {
		names[i] = im.Name
	}
	return strings.Join(names, ",")
}

func (f *implFlag) Set(s string) error {
	name, prefix, ok := strings.Cut(s, "=")
	if !ok || name == "" || prefix == "" {
		return fmt.Errorf("want NAME=PREFIX, got %q", s)
	}
	im, err := f.parse(name, prefix)
	if err != nil {
		return err
	}
	f.list = append(f.list, im)
	return nil
}

func sideBySideFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg   chainload.SideBySideConfig
		impls = implFlag{parse: chainproc.ImplementationFromPrefix}
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
		cfg.Implementations = impls.list
		var err error
		if cfg.Dir, err = workDir(cfg.Dir, "flurry-sidebyside-"); err != nil {
			return err
		}
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := chainload.RunSideBySide(ctx, cfg)
		if len(r.Downloads) > 0 {
			res.SideBySide = &r
		}
		return err
	}
}
