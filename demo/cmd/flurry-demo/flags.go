package main

import (
	"flag"
	"fmt"

	"github.com/flurrypt/flurry/demo"
)

// maxBrokers and maxFileSize bound -brokers and -size.
const (
	maxBrokers  = 16
	maxFileSize = 512 << 20
)

// options are the flags beyond demo.Config.
type options struct {
	binDir                           string
	keep, verbose, hold, showVersion bool
}

func parseFlags(fs *flag.FlagSet, args []string) (demo.Config, *options, error) {
	c := demo.Config{NATProbe: true}
	var o options
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-demo [flags]\n\nRuns broker, relay, NAT probe, proxies and client on loopback and downloads a file through them.\n\n")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.binDir, "bin", "", "use the binaries in this `directory` (as `make build` leaves them in ./bin) instead of building")
	fs.Int64Var(&c.FileSize, "size", demo.DefaultFileSize, "size of the file to download, in `bytes` (0 with -hold: serve the default size, download nothing)")
	fs.IntVar(&c.Proxies, "proxies", demo.DefaultProxies, "number of proxies")
	fs.IntVar(&c.ClientMax, "max", 1, "proxies the client uses at once (its -max)")
	fs.BoolVar(&o.keep, "keep", false, "keep the work directory with the logs after the demo")
	fs.BoolVar(&o.verbose, "v", false, "print every orchestration step")
	fs.IntVar(&c.Brokers, "brokers", 0, "run this many brokers as one cluster: a nats-server, the brokers joined through it (-nats) and HAProxy in front\n(round robin, health checks on /healthz); needs Debian's nats-server and haproxy. 0: one broker alone")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.BoolVar(&o.hold, "hold", false, "after the download (with -size 0: instead of it) keep the chain running, print the SOCKS address, the target URL and a\nflurry-loadgen chain command to measure it, until Ctrl-C or SIGTERM; then stop everything")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	switch {
	case fs.NArg() > 0:
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	case o.showVersion:
		return c, &o, nil
	case c.Brokers < 0 || c.Brokers > maxBrokers:
		return c, nil, fmt.Errorf("-brokers must be between 0 and %d", maxBrokers)
	case c.FileSize < 0 || c.FileSize > maxFileSize || (c.FileSize == 0 && !o.hold) || c.Proxies < 1 || c.ClientMax < 1:
		return c, nil, fmt.Errorf("-size must be between 1 and %d (0 only with -hold); -proxies and -max must be positive", maxFileSize)
	}
	return c, &o, nil
}
