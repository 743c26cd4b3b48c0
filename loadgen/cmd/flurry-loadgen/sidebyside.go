package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/report"
)

// implFlag collects -impl NAME=PREFIX flags, each parsed by parse:
// chainproc.ImplementationFromPrefix for whole chains,
// chainproc.ServerFromPrefix where only the relay is used; and -impl-env
// NAME=KEY=VALUE flags, the environment of an implementation's processes.
type implFlag struct {
	list  []chainproc.Implementation
	parse func(name, prefix string) (chainproc.Implementation, error)
	env   implEnvFlag
}

// register adds -impl, described by usage, and -impl-env to fs.
func (f *implFlag) register(fs *flag.FlagSet, usage string) {
	fs.Var(f, "impl", usage)
	fs.Var(&f.env, "impl-env", "a variable for every process of one implementation, as NAME=KEY=VALUE; repeat for each\n"+
		"(e.g. -impl flurry=bin/flurry- -impl gogc150=bin/flurry- -impl-env gogc150=GOGC=150)")
}

// implementations returns the -impl flags' implementations with their
// -impl-env variables.
func (f *implFlag) implementations() ([]chainproc.Implementation, error) {
	list := slices.Clone(f.list)
	for _, v := range f.env {
		i := slices.IndexFunc(list, func(im chainproc.Implementation) bool { return im.Name == v.name })
		if i < 0 {
			return nil, fmt.Errorf("%w: -impl-env %s: no -impl %s", measure.ErrInvalidConfig, v.name, v.name)
		}
		list[i].Env = append(slices.Clip(list[i].Env), v.kv)
	}
	return list, nil
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

// implEnvFlag collects -impl-env NAME=KEY=VALUE flags.
type implEnvFlag []struct{ name, kv string }

func (f *implEnvFlag) String() string {
	kvs := make([]string, len(*f))
	for i, v := range *f {
		kvs[i] = v.name + "=" + v.kv
	}
	return strings.Join(kvs, ",")
}

func (f *implEnvFlag) Set(s string) error {
	name, kv, _ := strings.Cut(s, "=")
	key, _, ok := strings.Cut(kv, "=")
	if name == "" || !ok || key == "" || strings.ContainsAny(key, " \t") {
		return fmt.Errorf("want NAME=KEY=VALUE, got %q", s)
	}
	*f = append(*f, struct{ name, kv string }{name, kv})
	return nil
}

func sideBySideFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg   chainload.SideBySideConfig
		impls = implFlag{parse: chainproc.ImplementationFromPrefix}
	)
	impls.register(fs, "an implementation to measure, as NAME=PREFIX: the binaries PREFIXbroker, PREFIXproxy,\n"+
		"PREFIXclient and PREFIXserver (or PREFIXrelay), run with Snowflake's flag names; repeat for each\n"+
		"(e.g. -impl snowflake=out/snowflake/ -impl flurry=bin/flurry-); ratios are to the first")
	fs.IntVar(&cfg.Downloads, "downloads", chainload.DefaultSideBySideDownloads, "downloads per implementation, alternating")
	fs.Int64Var(&cfg.Bytes, "bytes", chainload.DefaultSideBySideBytes, "bytes per download")
	fs.DurationVar(&cfg.PauseThreshold, "pause", chainload.DefaultPauseThreshold, "a gap between reads longer than this counts as a pause")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", chainload.DefaultSideBySidePoll, "the proxies' -poll-interval")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", chainload.DefaultChainRequestTimeout, "bound on each download")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the chains' logs and state (default: a new temporary directory, kept)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		var err error
		if cfg.Implementations, err = impls.implementations(); err != nil {
			return err
		}
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
