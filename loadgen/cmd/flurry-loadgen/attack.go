package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/flurrypt/flurry/loadgen"
)

// runFunc runs a mode once its flags are parsed.
type runFunc func(ctx context.Context, res *loadgen.Result, progress io.Writer) error

// attackModes are the modes of "flurry-loadgen attack <mode>": each
// registers its flags and returns its run.
var attackModes = []struct {
	name, help string
	flags      func(fs *flag.FlagSet, c *common) runFunc
}{
	{loadgen.AttackJunkOffers, "client offers no proxy can answer, from one address, beside honest clients and proxies",
		func(fs *flag.FlagSet, c *common) runFunc { return brokerAttackFlags(fs, c, loadgen.AttackJunkOffers) }},
	{loadgen.AttackAMPFlood, "GET /amp/client/ with valid offers from one address (pool draining), beside honest clients and proxies",
		func(fs *flag.FlagSet, c *common) runFunc { return brokerAttackFlags(fs, c, loadgen.AttackAMPFlood) }},
}

// attackUsage lists the attack modes.
func attackUsage() string {
	var b strings.Builder
	b.WriteString("usage: flurry-loadgen attack <mode> [flags]\n\nattack modes:\n")
	for _, m := range attackModes {
		fmt.Fprintf(&b, "  %-12s %s\n", m.name, m.help)
	}
	b.WriteString("\nRun \"flurry-loadgen attack <mode> -h\" for the flags of a mode.\n")
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
		fmt.Fprintf(stderr, "unknown attack mode %q\n\n", args[0])
	}
	fmt.Fprint(stderr, attackUsage())
	return nil, nil, "", false
}

func brokerAttackFlags(fs *flag.FlagSet, _ *common, attack string) runFunc {
	cfg := loadgen.BrokerAttackConfig{Attack: attack}
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "broker base URL (an IPv4 loopback address)")
	fs.IntVar(&cfg.Requests, "requests", loadgen.DefaultAttackRequests, "attack requests at most (the attack also ends with its phase)")
	fs.Float64Var(&cfg.AttackRate, "attack-rate", 0, "attack requests per second in all (0: back to back)")
	fs.IntVar(&cfg.Concurrency, "concurrency", loadgen.DefaultAttackConcurrency, "attacker connections, each sending back to back")
	fs.StringVar(&cfg.AttackerAddr, "attacker-addr", loadgen.DefaultAttackerAddr, "the attacker's source address (IPv4 loopback; honest peers use 127.1.x.y and 127.2.x.y)")
	fs.IntVar(&cfg.Proxies, "proxies", loadgen.DefaultAttackProxies, "honest proxies, each from its own address")
	fs.DurationVar(&cfg.ProxyInterval, "proxy-interval", 0, "an honest proxy's pause between polls (a real one waits NextPoll, 20s); 0: none")
	fs.IntVar(&cfg.Clients, "clients", loadgen.DefaultAttackClients, "honest clients, each from its own address")
	fs.Float64Var(&cfg.ClientRate, "rate", loadgen.DefaultAttackClientRate, "honest offers per second in all")
	fs.DurationVar(&cfg.Duration, "duration", loadgen.DefaultAttackDuration, "length of each phase: without the attack, then with it")
	fs.StringVar(&cfg.Fingerprint, "fingerprint", "", "bridge fingerprint the clients ask for (default Snowflake's)")
	return func(ctx context.Context, res *loadgen.Result, progress io.Writer) error {
		cfg.Progress = progress
		r, err := loadgen.RunBrokerAttack(ctx, cfg)
		res.BrokerAttack = &r
		return err
	}
}
