// Command flurry-relay is Flurry's bridge: it accepts WebSocket connections
// from proxies, runs the turbotunnel (KCP + smux) server, and forwards each
// client stream to tor (when run by tor as a managed pluggable transport) or
// to any TCP address (standalone mode). It turns flags into a relay.Config
// and runs the relay. See docs/relay.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/internal/torpt"
	"github.com/flurrypt/flurry/relay"
)

func main() {
	idlemem.Start(quietInterval)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-relay", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-relay:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-relay"))
		return 0
	}
	log, closeLog, err := servercmd.OpenLog(o.logFile, os.Stderr, servercmd.LogOptions{Unsafe: o.unsafeLogging})
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-relay:", err)
		return 1
	}
	defer closeLog()
	cfg.Logger = log
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.relayKeyFile != "" {
		err = loadRelayKey(&cfg, o.relayKeyFile)
	}
	if err == nil && torpt.Managed() {
		err = runManaged(ctx, cfg, o)
	} else if err == nil {
		err = runStandalone(ctx, cfg, o)
	}
	if err != nil {
		log.Error("flurry-relay stopped", "err", err)
		return 1
	}
	return 0
}

// loadRelayKey sets cfg.RelayKey from path, creating the key on first
// start, and prints its public key for the bridge lines.
func loadRelayKey(cfg *relay.Config, path string) error {
	key, err := tunnelseal.LoadOrCreateKeyFile(path)
	if err != nil {
		return err
	}
	pub, err := key.Public()
	if err != nil {
		return err
	}
	cfg.RelayKey = &key
	cfg.Logger.Info("sealed carriers on: add to bridge lines", "relay-key", pub.String())
	fmt.Fprintf(os.Stderr, "relay-key=%s\n", pub)
	return nil
}

// runStandalone forwards to -forward or -backend.
func runStandalone(ctx context.Context, cfg relay.Config, o *options) error {
	switch {
	case cfg.ForwardAddr == "" && len(cfg.Backends) == 0:
		return errors.New("standalone mode needs -forward or -backend (or run flurry-relay from tor as a pluggable transport)")
	case cfg.ForwardAddr != "" && len(cfg.Backends) > 0:
		return errors.New("choose -forward or -backend, not both")
	}
	t, err := o.tls.Setup(cfg.ListenAddr, cfg.Logger, "http/1.1")
	if err != nil {
		return err
	}
	defer t.Close()
	cfg.TLSConfig = t.Config
	r, err := relay.New(cfg)
	if err != nil {
		return err
	}
	cfg.Logger.Info("flurry-relay starting", "version", version.String(), "forward", cfg.ForwardAddr, "backends", len(cfg.Backends), "tls", t.Mode)
	return r.Run(ctx)
}

// runManaged runs the relay as tor's managed server transport: it listens
// where tor says and forwards to that tor; -addr and -forward are ignored.
func runManaged(ctx context.Context, cfg relay.Config, o *options) error {
	info, binds, err := torpt.ServerSetup("flurry-relay")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	torpt.ExitOnStdinClose(cancel)
	if cfg, err = relay.ForTor(cfg, &info, binds[0].Options, o.orportSrcAddr); err != nil {
		torpt.ServerFailed("bad configuration")
		return err
	}
	t, err := o.tls.Setup(binds[0].Addr.String(), cfg.Logger, "http/1.1")
	if err != nil {
		torpt.ServerFailed("TLS setup failed")
		return err
	}
	defer t.Close()
	cfg.TLSConfig = t.Config
	r, err := relay.New(cfg)
	if err != nil {
		torpt.ServerFailed("relay setup failed")
		return err
	}
	lns := torpt.ServerListen(binds, t.Config != nil, t.Hostnames, cfg.Logger)
	if len(lns) == 0 {
		r.Close()
		return errors.New("no listener")
	}
	cfg.Logger.Info("flurry-relay running as a managed transport", "version", version.String(), "listeners", len(lns))
	return r.RunOn(ctx, lns...)
}
