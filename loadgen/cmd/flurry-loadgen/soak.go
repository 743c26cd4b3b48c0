package main

import (
	"context"
	"flag"
	"io"
	"os"
	"path/filepath"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/loadgen/report"
	"github.com/flurrypt/flurry/loadgen/soak"
)

func soakFlags(fs *flag.FlagSet, c *common) runFunc {
	var (
		cfg    soak.SoakConfig
		binDir string
	)
	if exe, err := os.Executable(); err == nil {
		binDir = filepath.Dir(exe)
	}
	fs.StringVar(&binDir, "bin", binDir, "directory of the flurry-broker, -relay, -proxy, -client and -natprobe binaries (make build puts them in bin/)")
	fs.StringVar(&cfg.Dir, "dir", "out/soak", "directory for the processes' logs")
	fs.DurationVar(&cfg.Duration, "duration", soak.DefaultSoakDuration, "length of the soak")
	fs.DurationVar(&cfg.WarmUp, "warm-up", 0, "samples before this are not judged (default a fifth of -duration)")
	fs.IntVar(&cfg.Proxies, "proxies", soak.DefaultSoakProxies, "proxies (the first is never killed; the others are killed in turn)")
	fs.DurationVar(&cfg.SampleInterval, "sample-interval", soak.DefaultSoakSampleInterval, "time between two samples of every process")
	fs.DurationVar(&cfg.ProxyKillInterval, "proxy-kill-interval", soak.DefaultSoakProxyKill, "SIGKILL a proxy and start it again this often (negative: never)")
	fs.DurationVar(&cfg.BrokerRestartInterval, "broker-restart-interval", 0, "restart the broker this often (default half of -duration; negative: never)")
	fs.DurationVar(&cfg.ClientInterval, "client-interval", soak.DefaultSoakClientInterval, "a new flurry-client arrives this often (negative: none)")
	fs.DurationVar(&cfg.ClientLife, "client-life", soak.DefaultSoakClientLife, "how long an arriving client stays, downloading")
	fs.DurationVar(&cfg.DownloadInterval, "download-interval", soak.DefaultSoakDownloadInterval, "each client's pause between two downloads")
	fs.Int64Var(&cfg.FileSize, "file-size", soak.DefaultSoakFileSize, "size of the file downloaded")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Binaries = demo.BinariesIn(binDir)
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := soak.RunSoak(ctx, cfg)
		if r.DurationSeconds > 0 {
			res.Soak = &r
		}
		return err
	}
}
