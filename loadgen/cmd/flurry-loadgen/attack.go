package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/flurrypt/flurry/loadgen"
)

// An attackMode is one `flurry-loadgen attack <mode>`: its summary and a
// function that registers its flags and returns the run.
type attackMode struct {
	summary string
	flags   func(fs *flag.FlagSet, c *common) func(ctx context.Context, progress io.Writer) (loadgen.AttackResult, error)
}

// attackModes maps each attack's name to its mode. Add an attack here.
var attackModes = map[string]attackMode{
	"relay-sessions": {"one-packet WebSocket connections (token, random ClientID, one KCP packet, close) against a relay", relaySessionsFlags},
	"carrier-hold":   {"many carriers from one address held open against a relay", carrierHoldFlags},
	"slowloris":      {"connections that send an HTTP request one byte at a time, against any server URL", slowlorisFlags},
}

func attackUsage() string {
	var b strings.Builder
	b.WriteString("usage: flurry-loadgen attack <mode> [flags]\n\nmodes:\n")
	names := make([]string, 0, len(attackModes))
	for name := range attackModes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		fmt.Fprintf(&b, "  %-15s %s\n", name, attackModes[name].summary)
	}
	b.WriteString("\nEvery attack is bounded in count and time and prints its figures.\nRun \"flurry-loadgen attack <mode> -h\" for the flags of a mode.\n")
	return b.String()
}

// runAttack runs `flurry-loadgen attack args...`.
func runAttack(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stderr, attackUsage())
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	name, args := args[0], args[1:]
	mode, ok := attackModes[name]
	if !ok {
		fmt.Fprintf(stderr, "unknown attack %q\n\n%s", name, attackUsage())
		return 2
	}
	fs := flag.NewFlagSet("flurry-loadgen attack "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	runFn := mode.flags(fs, &c)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, c.maxTime)
	defer cancel()
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	res := loadgen.NewResult("attack " + name)
	r, err := runFn(ctx, progress)
	if r.Attack != "" {
		res.Attack = &r
		if werr := r.WriteText(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		res.Error = err.Error()
	}
	if c.jsonPath != "" {
		if werr := writeFile(c.jsonPath, res.WriteJSON); werr != nil {
			fmt.Fprintf(stderr, "write %s: %v\n", c.jsonPath, werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "flurry-loadgen attack %s: %v\n", name, err)
		if errors.Is(err, loadgen.ErrInvalidConfig) || errors.Is(err, loadgen.ErrNotLoopback) {
			return 2
		}
		return 1
	}
	return 0
}

func relaySessionsFlags(fs *flag.FlagSet, c *common) func(context.Context, io.Writer) (loadgen.AttackResult, error) {
	var cfg loadgen.RelaySessionsConfig
	fs.StringVar(&cfg.URL, "url", "ws://127.0.0.1:8000/", "relay WebSocket URL (ws:// or wss://)")
	fs.IntVar(&cfg.Conns, "conns", loadgen.DefaultAttackConns, "one-packet connections to make")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultAttackConcurrency, "connections in flight")
	fs.StringVar(&cfg.Packet, "packet", loadgen.PacketHeader, "first packet: header (24-byte KCP header), nop (a valid first packet that opens no stream) or syn (opens a stream)")
	fs.StringVar(&cfg.Source, "source", "", "local IP address to attack from (e.g. 127.0.0.2)")
	fs.IntVar(&cfg.PID, "pid", 0, "the relay's process ID, for its RSS (Linux /proc)")
	fs.DurationVar(&cfg.WatchAfter, "watch-after", loadgen.DefaultAttackWatchAfter, "with -pid: keep sampling the relay's RSS this long after the flood")
	fs.Int64Var(&cfg.HonestBytes, "honest-bytes", 0, "an honest client downloads this many bytes through the relay during the flood and checks their SHA-256 (the relay must forward to a flurry-loadgen target -mode random)")
	fs.StringVar(&cfg.HonestSource, "honest-source", "127.0.0.1", "local IP address of the honest client")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", loadgen.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, progress io.Writer) (loadgen.AttackResult, error) {
		cfg.Insecure, cfg.AllowNonLoopback = c.insecure, c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		return loadgen.RunRelaySessions(ctx, cfg)
	}
}

func carrierHoldFlags(fs *flag.FlagSet, c *common) func(context.Context, io.Writer) (loadgen.AttackResult, error) {
	var cfg loadgen.CarrierHoldConfig
	fs.StringVar(&cfg.URL, "url", "ws://127.0.0.1:8000/", "relay WebSocket URL (ws:// or wss://)")
	fs.IntVar(&cfg.Carriers, "carriers", loadgen.DefaultHoldCarriers, "carriers to open and hold")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultAttackConcurrency, "handshakes in flight")
	fs.StringVar(&cfg.Packet, "packet", "", "first packet after the ClientID: none (default), header, nop or syn")
	fs.DurationVar(&cfg.Hold, "hold", loadgen.DefaultHoldDuration, "how long to hold the carriers")
	fs.DurationVar(&cfg.KeepAlive, "keepalive", 20*time.Second, "send a padding chunk on every carrier this often (0: never)")
	fs.StringVar(&cfg.Source, "source", "", "local IP address to attack from (e.g. 127.0.0.2)")
	fs.IntVar(&cfg.PID, "pid", 0, "the relay's process ID, for its RSS (Linux /proc)")
	fs.DurationVar(&cfg.WatchAfter, "watch-after", loadgen.DefaultAttackWatchAfter, "with -pid: keep sampling the relay's RSS this long after the carriers are released")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", loadgen.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, progress io.Writer) (loadgen.AttackResult, error) {
		cfg.Insecure, cfg.AllowNonLoopback = c.insecure, c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		return loadgen.RunCarrierHold(ctx, cfg)
	}
}

func slowlorisFlags(fs *flag.FlagSet, c *common) func(context.Context, io.Writer) (loadgen.AttackResult, error) {
	var cfg loadgen.SlowlorisConfig
	fs.StringVar(&cfg.URL, "url", "ws://127.0.0.1:8000/", "server URL: http, https, ws or wss (relay, broker, natprobe...)")
	fs.IntVar(&cfg.Conns, "conns", loadgen.DefaultSlowlorisConns, "connections to open and keep")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultAttackConcurrency, "connection attempts in flight")
	fs.DurationVar(&cfg.Interval, "interval", loadgen.DefaultSlowlorisInterval, "time between two header bytes on a connection")
	fs.DurationVar(&cfg.Duration, "duration", loadgen.DefaultSlowlorisDuration, "how long the attack lasts")
	fs.StringVar(&cfg.Source, "source", "", "local IP address to attack from (e.g. 127.0.0.2)")
	fs.IntVar(&cfg.PID, "pid", 0, "the server's process ID, for its RSS (Linux /proc)")
	fs.DurationVar(&cfg.WatchAfter, "watch-after", loadgen.DefaultAttackWatchAfter, "with -pid: keep sampling the server's RSS this long after the attack")
	return func(ctx context.Context, progress io.Writer) (loadgen.AttackResult, error) {
		cfg.Insecure, cfg.AllowNonLoopback = c.insecure, c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		return loadgen.RunSlowloris(ctx, cfg)
	}
}
