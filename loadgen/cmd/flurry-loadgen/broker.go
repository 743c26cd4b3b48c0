package main

import (
	"context"
	"flag"
	"io"

	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/loadgen/brokerload"
	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
	"github.com/flurrypt/flurry/loadgen/report"
)

func brokerFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg                           brokerload.BrokerConfig
		clients                       = intList{brokerload.DefaultBrokerClients}
		idle                          intList
		proxyNAT, proxyTypes, cliNATs = mixFlag{}, mixFlag{}, mixFlag{}
	)
	proxyNAT.m, _ = brokerload.ParseMix(brokerload.DefaultProxyNATMix)
	proxyTypes.m, _ = brokerload.ParseMix(brokerload.DefaultProxyTypeMix)
	cliNATs.m, _ = brokerload.ParseMix(brokerload.DefaultClientNATMix)
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "broker base URL")
	fs.Func("check-urls", "comma-separated Prometheus URLs of brokers (e.g. each instance behind -url) whose waiting polls and goroutines are reported once the load has stopped", func(v string) error {
		cfg.CheckURLs = commalist.Split(v)
		return nil
	})
	fs.StringVar(&cfg.ClientURL, "client-url", "", "send the clients' offers here instead of -url (another instance of a broker cluster: every match crosses instances)")
	fs.IntVar(&cfg.Proxies, "proxies", brokerload.DefaultBrokerProxies, "simulated proxies polling during the client steps")
	fs.Var(&clients, "clients", "client concurrency of each step, comma-separated (e.g. 1,10,50)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "total offers per second per step (0: back to back)")
	fs.DurationVar(&cfg.StepDuration, "duration", brokerload.DefaultStepDuration, "duration of each client step")
	fs.Var(&idle, "idle-polls", "idle phase first: hold this many proxy polls at once, comma-separated steps (e.g. 1000,5000); needs -pid")
	fs.BoolVar(&cfg.IdleBurst, "idle-burst", false, "start each idle step's new polls all at once (default: in batches of 250)")
	fs.DurationVar(&cfg.IdleSettle, "idle-settle", brokerload.DefaultIdleSettle, "wait after each idle step's polls are waiting before sampling memory")
	fs.DurationVar(&cfg.IdleWindow, "idle-window", 0, "sample memory every 200ms for this long after -idle-settle and report the largest RSS too (e.g. 20s, two proxy holds: the steady state, waves of returning polls included); 0: five samples over a second")
	fs.Var(&proxyNAT, "proxy-nat", "proxy NAT mix, value=weight,...")
	fs.Var(&proxyTypes, "proxy-types", "proxy type mix, value=weight,...")
	fs.Var(&cliNATs, "client-nat", "client NAT mix, value=weight,...")
	fs.StringVar(&cfg.RelayPattern, "relay-pattern", "", `AcceptedRelayPattern the proxies send: "" accepts every relay; else the broker's -allowed-relay-pattern or a superset`)
	fs.StringVar(&cfg.Fingerprint, "fingerprint", "", "bridge fingerprint the clients ask for (default Snowflake's default bridge)")
	fs.IntVar(&cfg.PID, "pid", 0, "the broker's process ID, for RSS and CPU (Linux /proc)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", brokerwire.DefaultRequestTimeout, "bound on every HTTP request")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Clients, cfg.IdlePolls = clients, idle
		cfg.ProxyNAT, cfg.ProxyTypes, cfg.ClientNAT = proxyNAT.m, proxyTypes.m, cliNATs.m
		cfg.Insecure, cfg.AllowNonLoopback = c.insecure, c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		b, err := brokerload.RunBroker(ctx, cfg)
		if b.URL != "" {
			res.Broker = &b
		}
		return err
	}
}
