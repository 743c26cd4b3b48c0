package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/manyusers"
	"github.com/flurrypt/flurry/loadgen/relayload"
	"github.com/flurrypt/flurry/loadgen/report"
)

// mixFlags registers the flags of a manyusers.UserMix.
func mixFlags(fs *flag.FlagSet, m *manyusers.UserMix) {
	fs.Float64Var(&m.BulkShare, "bulk", manyusers.DefaultBulkShare, "share of users that download without pause (the first user is one); negative: none")
	fs.IntVar(&m.RequestBytes, "request-bytes", manyusers.DefaultRequestBytes, "an interactive user's request size")
	fs.IntVar(&m.ResponseBytes, "response-bytes", manyusers.DefaultResponseBytes, "an interactive user's response size")
	fs.DurationVar(&m.Think, "think", manyusers.DefaultThinkTime, "an interactive user's pause after each response")
}

// workDir returns dir, or a new temporary directory (kept) if empty.
func workDir(dir, pattern string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(os.Stderr, "logs and state in %s\n", dir)
	return dir, nil
}

func relayUsersFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg      relayload.RelayUsersConfig
		impls    = implFlag{parse: chainproc.ServerFromPrefix}
		sessions = intList(relayload.DefaultRelayUsers)
	)
	impls.register(fs, "a relay to measure, as NAME=PREFIX: the binary PREFIXserver (or PREFIXrelay), started as a\n"+
		"managed pluggable transport as tor starts it; repeat for each (e.g. -impl snowflake=out/snowflake/\n"+
		"-impl flurry=bin/flurry-); ratios are to the first")
	fs.Var(&sessions, "users", "concurrent users (sessions) of each step, comma-separated")
	fs.IntVar(&cfg.Rounds, "rounds", manyusers.DefaultUsersRounds, "runs per relay and step, the order alternating")
	mixFlags(fs, &cfg.Mix)
	fs.DurationVar(&cfg.Duration, "duration", manyusers.DefaultUsersDuration, "measured window of each run")
	fs.DurationVar(&cfg.WarmUp, "warm-up", manyusers.DefaultUsersWarmUp, "wait after every user has a byte, before the window")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", relayload.DefaultUsersStartTimeout, "bound on the wait for every user's first byte")
	fs.IntVar(&cfg.DialConcurrency, "dial-concurrency", wscarrier.DefaultDialConcurrency, "concurrent carrier handshakes")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", wscarrier.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the relays' logs (default: a new temporary directory, kept)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Sessions = sessions
		var err error
		if cfg.Implementations, err = impls.implementations(); err != nil {
			return err
		}
		if cfg.Dir, err = workDir(cfg.Dir, "flurry-relayusers-"); err != nil {
			return err
		}
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := relayload.RunRelayUsers(ctx, cfg)
		if len(r.Runs) > 0 {
			res.RelayUsers = &r
		}
		return err
	}
}

func proxyUsersFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg   chainload.ProxyUsersConfig
		impls = implFlag{parse: chainproc.ImplementationFromPrefix}
		users = intList(chainload.DefaultProxyUsers)
	)
	impls.register(fs, "an implementation to measure, as NAME=PREFIX (see sidebyside); repeat for each; ratios are to the first")
	fs.Var(&users, "users", "concurrent users through the one proxy at each step, comma-separated")
	fs.IntVar(&cfg.Rounds, "rounds", manyusers.DefaultUsersRounds, "runs per implementation and step, the order alternating")
	mixFlags(fs, &cfg.Mix)
	fs.DurationVar(&cfg.Duration, "duration", manyusers.DefaultUsersDuration, "measured window of each run")
	fs.DurationVar(&cfg.WarmUp, "warm-up", manyusers.DefaultUsersWarmUp, "wait after every user has a byte, before the window")
	fs.DurationVar(&cfg.StartTimeout, "start-timeout", chainload.DefaultProxyUsersStartTimeout, "bound on the wait for every user's first byte (one user per proxy poll)")
	fs.DurationVar(&cfg.PollInterval, "poll-interval", chainload.DefaultSideBySidePoll, "the proxies' -poll-interval")
	fs.StringVar(&cfg.Dir, "dir", "", "directory for the chains' logs and state (default: a new temporary directory, kept)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Users = users
		var err error
		if cfg.Implementations, err = impls.implementations(); err != nil {
			return err
		}
		if cfg.Dir, err = workDir(cfg.Dir, "flurry-proxyusers-"); err != nil {
			return err
		}
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := chainload.RunProxyUsers(ctx, cfg)
		if len(r.Runs) > 0 {
			res.ProxyUsers = &r
		}
		return err
	}
}
