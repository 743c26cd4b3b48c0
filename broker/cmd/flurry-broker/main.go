// Command flurry-broker is Flurry's rendezvous broker, a drop-in for
// Snowflake's broker: Snowflake proxies and clients use it unchanged. It
// parses flags into a broker.Config and runs the broker. See docs/broker.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/servercmd"
)

// quietInterval is how long the broker must go without a garbage
// collection before it returns its idle memory to the operating system.
// Proxies come in waves (a restart, polls that end together and come back
// together) and then wait quietly for up to -proxy-hold: a short interval
// gives a wave's garbage back before the next one. A busy broker collects
// by itself and is left alone; a quiet one pays a collection of its small
// heap every interval at most.
const quietInterval = 2 * time.Second

// allocationWindow is how much of its recent allocation a steadily busy
// broker may leave as garbage before it collects
// (idlemem.FollowAllocation): at several thousand matches a second,
// GOGC=50 of its small live heap alone collects 40 times a second, each
// collection scanning every connection's goroutine, for about a sixth of
// its CPU; with it, about four times. Waiting polls and the waves they
// return in keep GOGC=50 (docs/performance.md, "Broker").
const allocationWindow = 250 * time.Millisecond

func main() {
	idlemem.Start(quietInterval)
	idlemem.FollowAllocation(allocationWindow)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-broker", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-broker:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-broker"))
		return 0
	}
	if err := serve(cfg, o); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-broker:", err)
		return 1
	}
	return 0
}

// serve runs the broker until SIGINT or SIGTERM; SIGHUP reloads it.
func serve(cfg broker.Config, o *options) error {
	log := servercmd.NewLogger(os.Stderr, servercmd.LogOptions{Level: o.logLevel, Unsafe: o.unsafeLogging})
	cfg.Logger = log
	if !o.disableGeoIP {
		var err error
		if cfg.GeoIP, err = broker.OpenGeoIP(o.geoip[0], o.geoip[1], log); err != nil {
			return fmt.Errorf("loading geoip databases (-geoipdb %q, -geoip6db %q; -disable-geoip runs without): %w", o.geoip[0], o.geoip[1], err)
		}
	}
	t, err := o.tls.Setup(cfg.ListenAddr, log, "h2", "http/1.1")
	if err != nil {
		return err
	}
	defer t.Close()
	cfg.TLSConfig = t.Config
	b, err := broker.New(cfg)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go servercmd.OnSignal(ctx, syscall.SIGHUP, b.Reload)
	log.Info("flurry-broker starting", "tls", t.Mode)
	return b.Run(ctx)
}
