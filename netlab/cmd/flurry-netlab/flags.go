package main

import (
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

const usage = `usage:
  flurry-netlab run [flags] -- CMD [ARGS...]
      Build the lab, run CMD in the client namespace with
      FLURRY_NETLAB_CLIENT_NS, FLURRY_NETLAB_OUTSIDE_NS and
      FLURRY_NETLAB_OUTSIDE_ADDR set, print the box's counters, tear down.
      Exits with CMD's status.
  flurry-netlab tcpref [flags]
      Build the lab and download -size bytes over plain TCP from a server
      on the outside (203.0.113.1) to a client on the client side; print
      MB/s, time to first byte and the box's drops.
  flurry-netlab -version
      Print the version and exit.

The client side is 198.51.100.2/24 with a default route through the box;
the outside has 203.0.113.1/24 and 203.0.113.2 to .9.

Profiles (one-way, each direction): lan, wifi (10ms, 2ms jitter, 0.5% loss),
intercontinental (75ms, 5ms jitter, 1% loss), mobile (150ms, 30ms jitter,
3% loss, 5mbit), or parameters such as delay=20ms,jitter=2ms,loss=0.5%,rate=5mbit
(also queue=50ms, reorder), optionally after a name: mobile,loss=5%.

Flags:
`

// options are the flags both modes share.
type options struct {
	cfg     netlab.Config
	up      string
	down    string
	profile string
	censors string
	verbose bool
	size    string
}

func newFlagSet(mode string, o *options, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("flurry-netlab "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.cfg.Name, "name", "", "name `prefix` of the namespaces (<name>c, <name>o) and devices; default fl<pid>")
	fs.StringVar(&o.profile, "profile", "", "path `profile` of both directions (overridden by -up and -down)")
	fs.StringVar(&o.up, "up", "", "path `profile` from the client side to the outside")
	fs.StringVar(&o.down, "down", "", "path `profile` from the outside to the client side")
	fs.StringVar(&o.censors, "censor", "", "comma-separated censor program `names` (every packet meets each; the first drop wins): "+strings.Join(censor.Names(), ", ")+"; see docs/censorship.md")
	fs.Uint64Var(&o.cfg.Seed, "seed", 1, "`seed` of the random loss and jitter")
	fs.BoolVar(&o.verbose, "verbose", false, "debug logging")
	if mode == "tcpref" {
		fs.StringVar(&o.size, "size", "20MiB", "download `size` (B, KB, MB, KiB, MiB, GiB)")
	}
	return fs
}

// fill turns the flags into o.cfg.
func (o *options) fill() error {
	both, err := netlab.ParseProfile(o.profile)
	if err != nil {
		return fmt.Errorf("-profile: %w", err)
	}
	o.cfg.Up, o.cfg.Down = both, both
	if o.up != "" {
		if o.cfg.Up, err = netlab.ParseProfile(o.up); err != nil {
			return fmt.Errorf("-up: %w", err)
		}
	}
	if o.down != "" {
		if o.cfg.Down, err = netlab.ParseProfile(o.down); err != nil {
			return fmt.Errorf("-down: %w", err)
		}
	}
	if o.censors != "" {
		if o.cfg.Censor, err = censor.Parse(o.censors, censor.Options{}); err != nil {
			return fmt.Errorf("-censor: %w", err)
		}
	}
	return nil
}

// parseSize parses a byte count such as 20MiB, 1.5MB or 4096.
func parseSize(s string) (int64, error) {
	mult := 1.0
	num := s
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if rest, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = rest, u.mult
			break
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w", s, err)
	}
	f *= mult
	if !(f >= 1 && f <= 1<<40) {
		return 0, fmt.Errorf("size %q not within 1 B..1 TiB", s)
	}
	return int64(f), nil
}
