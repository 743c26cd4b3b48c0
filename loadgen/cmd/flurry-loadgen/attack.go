package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/loadgen/attack"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/report"
)

// attackModes are the modes of "flurry-loadgen attack <mode>": each
// registers its flags and returns its run.
var attackModes = []struct {
	name, help string
	flags      func(fs *flag.FlagSet, c *common) runFunc
}{
	{attack.AttackJunkOffers, "client offers no proxy can answer, from one address, beside honest clients and proxies",
		func(fs *flag.FlagSet, c *common) runFunc { return brokerAttackFlags(fs, c, attack.AttackJunkOffers) }},
	{attack.AttackAMPFlood, "GET /amp/client/ with valid offers from one address (pool draining), beside honest clients and proxies",
		func(fs *flag.FlagSet, c *common) runFunc { return brokerAttackFlags(fs, c, attack.AttackAMPFlood) }},
	{attack.AttackConnFlood, "connections held open from a few addresses (the broker's file descriptors), beside honest clients and proxies",
		connFloodFlags},
	{"relay-sessions", "one-packet WebSocket connections (token, random ClientID, one KCP packet, close) against a relay", relaySessionsFlags},
	{"carrier-hold", "many carriers from one address held open against a relay", carrierHoldFlags},
	{"slowloris", "connections that send an HTTP request one byte at a time, against any server URL", slowlorisFlags},
}

// attackUsage lists the attack modes.
func attackUsage() string {
	var b strings.Builder
	b.WriteString("usage: flurry-loadgen attack <mode> [flags]\n\nattack modes:\n")
	for _, m := range attackModes {
		fmt.Fprintf(&b, "  %-15s %s\n", m.name, m.help)
	}
	b.WriteString("\nEvery attack is bounded in count and time and prints its figures.\nRun \"flurry-loadgen attack <mode> -h\" for the flags of a mode.\n")
	return b.String()
}

// attackFlags picks the attack mode named by args[0] and registers its
// flags; it returns the run, the remaining arguments and the mode's name,
// or ok false after printing the usage.
func attackFlags(fs *flag.FlagSet, c *common, args []string, stderr io.Writer) (run runFunc, rest []string, name string, ok bool) {
	if len(args) > 0 {
		for _, m := range attackModes {
			if m.name == args[0] {
				return m.flags(fs, c), args[1:], m.name, true
			}
		}
		fmt.Fprintf(stderr, "unknown attack %q\n\n", args[0])
	}
	fmt.Fprint(stderr, attackUsage())
	return nil, nil, "", false
}

func brokerAttackFlags(fs *flag.FlagSet, _ *common, name string) runFunc {
	cfg := attack.BrokerAttackConfig{Attack: name}
	brokerAttackCommonFlags(fs, &cfg)
	fs.IntVar(&cfg.Requests, "requests", attack.DefaultAttackRequests, "attack requests at most (the attack also ends with its phase)")
	fs.Float64Var(&cfg.AttackRate, "attack-rate", 0, "attack requests per second in all (0: back to back)")
	fs.IntVar(&cfg.Concurrency, "concurrency", attack.DefaultAttackConcurrency, "attacker connections, each sending back to back")
	fs.StringVar(&cfg.AttackerAddr, "attacker-addr", attack.DefaultAttackerAddr, "the attacker's source address (IPv4 loopback; honest peers use 127.1.x.y and 127.2.x.y)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Progress = progress
		r, err := attack.RunBrokerAttack(ctx, cfg)
		res.BrokerAttack = &r
		return err
	}
}

// brokerAttackCommonFlags registers the flags of the honest load every
// broker attack shares.
func brokerAttackCommonFlags(fs *flag.FlagSet, cfg *attack.BrokerAttackConfig) {
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "broker base URL (an IPv4 loopback address)")
	fs.IntVar(&cfg.Proxies, "proxies", attack.DefaultAttackProxies, "honest proxies, each from its own address")
	fs.DurationVar(&cfg.ProxyInterval, "proxy-interval", 0, "an honest proxy's pause between polls (a real one waits NextPoll, 20s); 0: none")
	fs.IntVar(&cfg.Clients, "clients", attack.DefaultAttackClients, "honest clients, each from its own address")
	fs.Float64Var(&cfg.ClientRate, "rate", attack.DefaultAttackClientRate, "honest offers per second in all")
	fs.DurationVar(&cfg.Duration, "duration", attack.DefaultAttackDuration, "length of each phase: without the attack, then with it")
	fs.StringVar(&cfg.Fingerprint, "fingerprint", "", "bridge fingerprint the clients ask for (default Snowflake's)")
	fs.StringVar(&cfg.MetricsURL, "metrics-url", "", "the broker's Prometheus URL (its -metrics-addr listener's /prometheus): report its refused connections and failed accepts per phase")
}

func connFloodFlags(fs *flag.FlagSet, _ *common) runFunc {
	cfg := attack.BrokerAttackConfig{Attack: attack.AttackConnFlood}
	brokerAttackCommonFlags(fs, &cfg)
	fs.IntVar(&cfg.Requests, "conns", attack.DefaultFloodRequests, "connections the flood opens at most, in all (it also ends with its phase)")
	fs.IntVar(&cfg.ConnsPerAddr, "conns-per-addr", attack.DefaultFloodConnsPerAddr, "connections the flood tries to hold at once from each address")
	fs.Func("flood-addrs", "comma-separated source addresses of the flood (IPv4 loopback outside 127.1/16 and 127.2/16; default "+strings.Join(attack.DefaultFloodAddrs, ",")+")", func(s string) error {
		cfg.FloodAddrs = commalist.Split(s)
		return nil
	})
	fs.BoolVar(&cfg.HonestNewConns, "honest-new-conns", true, "every honest request on a new connection, as arriving peers (false: each honest peer keeps its keep-alive connection)")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Progress = progress
		r, err := attack.RunBrokerAttack(ctx, cfg)
		res.BrokerAttack = &r
		return err
	}
}

// attackResult records a relay or slowloris attack's result in res.
func attackResult(res *report.Result, r attack.AttackResult, err error) error {
	if r.Attack != "" {
		res.Attack = &r
	}
	return err
}

// attackTargetFlags registers the flags every connection attack shares, and
// returns what fills in the rest of t once the flags are parsed. server
// names the attacked server, and concurrency says what runs concurrently,
// in the help texts.
func attackTargetFlags(fs *flag.FlagSet, c *common, t *attack.AttackTarget, urlHelp, server, concurrency string) func(progress io.Writer) {
	fs.StringVar(&t.URL, "url", "ws://127.0.0.1:8000/", urlHelp)
	fs.IntVar(&t.Concurrency, "concurrency", attack.DefaultFloodConcurrency, concurrency+" in flight")
	fs.StringVar(&t.Source, "source", "", "local IP address to attack from (e.g. 127.0.0.2)")
	fs.IntVar(&t.PID, "pid", 0, "the "+server+"'s process ID, for its RSS (Linux /proc)")
	fs.DurationVar(&t.WatchAfter, "watch-after", attack.DefaultAttackWatchAfter, "with -pid: keep sampling the "+server+"'s RSS this long after the attack")
	return func(progress io.Writer) {
		t.Insecure, t.AllowNonLoopback = c.insecure, c.allowNonLoopback
		t.Progress, t.ProgressInterval = progress, c.progressInterval
	}
}

const relayURLHelp = "relay WebSocket URL (ws:// or wss://)"

func relaySessionsFlags(fs *flag.FlagSet, c *common) runFunc {
	var cfg attack.SessionFloodConfig
	finish := attackTargetFlags(fs, c, &cfg.AttackTarget, relayURLHelp, "relay", "connections")
	fs.IntVar(&cfg.Conns, "conns", attack.DefaultAttackConns, "one-packet connections to make")
	fs.StringVar(&cfg.Packet, "packet", attack.PacketHeader, "first packet: header (24-byte KCP header), nop (a valid first packet that opens no stream) or syn (opens a stream)")
	fs.Int64Var(&cfg.HonestBytes, "honest-bytes", 0, "an honest client downloads this many bytes through the relay during the flood and checks their SHA-256 (the relay must forward to a flurry-loadgen target -mode random)")
	fs.StringVar(&cfg.HonestSource, "honest-source", "127.0.0.1", "local IP address of the honest client")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", wscarrier.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		finish(progress)
		r, err := attack.RunSessionFlood(ctx, cfg)
		return attackResult(res, r, err)
	}
}

func carrierHoldFlags(fs *flag.FlagSet, c *common) runFunc {
	var cfg attack.CarrierHoldConfig
	finish := attackTargetFlags(fs, c, &cfg.AttackTarget, relayURLHelp, "relay", "handshakes")
	fs.IntVar(&cfg.Carriers, "carriers", attack.DefaultHoldCarriers, "carriers to open and hold")
	fs.StringVar(&cfg.Packet, "packet", "", "first packet after the ClientID: none (default), header, nop or syn")
	fs.DurationVar(&cfg.Hold, "hold", attack.DefaultHoldDuration, "how long to hold the carriers")
	fs.DurationVar(&cfg.KeepAlive, "keepalive", 20*time.Second, "send a padding chunk on every carrier this often (0: never)")
	fs.DurationVar(&cfg.HandshakeTimeout, "handshake-timeout", wscarrier.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		finish(progress)
		r, err := attack.RunCarrierHold(ctx, cfg)
		return attackResult(res, r, err)
	}
}

func slowlorisFlags(fs *flag.FlagSet, c *common) runFunc {
	var cfg attack.SlowlorisConfig
	finish := attackTargetFlags(fs, c, &cfg.AttackTarget, "server URL: http, https, ws or wss (relay, broker, natprobe...)", "server", "connection attempts")
	fs.IntVar(&cfg.Conns, "conns", attack.DefaultSlowlorisConns, "connections to open and keep")
	fs.DurationVar(&cfg.Interval, "interval", attack.DefaultSlowlorisInterval, "time between two header bytes on a connection")
	fs.DurationVar(&cfg.Duration, "duration", attack.DefaultSlowlorisDuration, "how long the attack lasts")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		finish(progress)
		r, err := attack.RunSlowloris(ctx, cfg)
		return attackResult(res, r, err)
	}
}
