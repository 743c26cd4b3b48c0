package main

import (
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/clientaddr"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/servercmd"
)

// options are what the command line sets beyond broker.Config.
type options struct {
	tls           servercmd.TLSFlags
	logLevel      slog.Level
	unsafeLogging bool
	disableGeoIP  bool
	geoip         [2]string // IPv4, IPv6 file
	sqs           broker.SQSConfig
	sqsProfiles   string
	showVersion   bool
}

func parseFlags(fs *flag.FlagSet, args []string) (broker.Config, *options, error) {
	var c broker.Config
	o := &options{}
	var penalty time.Duration
	prefixes := func(dst *[]netip.Prefix, name, usage string) {
		fs.Func(name, usage, func(s string) (err error) { *dst, err = clientaddr.ParsePrefixes(name, s); return err })
	}
	fs.StringVar(&c.ListenAddr, "addr", ":443", "`address` to listen on")
	o.tls.Register(fs, "acme-cert-cache")
	fs.StringVar(&c.BridgeListPath, "bridge-list-path", "", "bridge list file: one JSON object per line with displayName, webSocketAddress and fingerprint (default: one bridge, fingerprint 2B280B23E1107BB62ABFC40DDCC8824814F80A72 at "+broker.DefaultRelayURL+")")
	fs.StringVar(&c.AllowedRelayPattern, "allowed-relay-pattern", "", "relay hostname pattern (ending in '$', leading '^' for an exact name): proxies whose AcceptedRelayPattern is not a superset are told \"incorrect relay pattern\", and every bridge must match it. Empty: accept any proxy whose pattern accepts at least one bridge")
	fs.StringVar(&c.PollIntervalPath, "poll-interval-filepath", "", `JSON file with the proxies' NextPoll per pool in milliseconds, {"unrestricted_poll_interval": 20000, "restricted_poll_interval": 20000}; reloaded on SIGHUP`)
	fs.BoolVar(&o.disableGeoIP, "disable-geoip", false, "do not load geoip databases: every country in the statistics is \"??\"")
	fs.StringVar(&o.geoip[0], "geoipdb", broker.DefaultGeoIPFile, "tor-format IPv4 geoip file; reloaded on SIGHUP (empty: no IPv4 table). Missing at the default path (no tor-geoipdb): a warning, no country counts; any other file must load")
	fs.StringVar(&o.geoip[1], "geoip6db", broker.DefaultGeoIP6File, "tor-format IPv6 geoip file; reloaded on SIGHUP (empty: no IPv6 table); as -geoipdb")
	fs.StringVar(&c.MetricsLogPath, "metrics-log", "", "file the metrics descriptor is appended to every -metrics-interval, served at /metrics (empty: descriptors are logged and /metrics is 404)")
	fs.DurationVar(&c.MetricsInterval, "metrics-interval", broker.DefaultMetricsInterval, "period of the metrics descriptor (at least 1s)")
	fs.StringVar(&c.IPCountPrefix, "ip-count-prefix", "", "count distinct proxy addresses per -ip-count-interval into files <prefix>-<category>-<start>.log (six categories, as Snowflake; counts binned to multiples of 8, addresses never stored); empty: off")
	fs.DurationVar(&c.IPCountInterval, "ip-count-interval", time.Hour, "period of the -ip-count-prefix counts (at least 1s)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", broker.DefaultMetricsAddr, "operator listener (plain HTTP, not rate limited): GET /prometheus, /debug, /metrics, /status, /healthz; keep it on loopback or firewalled. Empty: none")
	fs.StringVar(&c.WebProxyDir, "webproxy", "", "`directory` of the browser proxy's web pages, served at /webproxy/ (make webproxy builds them into out/webproxy/web: the badge is /webproxy/badge.html); empty: none")
	fs.BoolVar(&c.PublicPrometheus, "public-prometheus", false, "also serve GET /prometheus on the public listener (-addr), limited per address as -page-rate (off: only on -metrics-addr, where nobody else can crowd out the operator's scrapes)")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.TextVar(&o.logLevel, "log-level", slog.LevelInfo, "log `level`: debug, info, warn or error")
	fs.DurationVar(&c.ProxyHold, "proxy-hold", broker.DefaultProxyHold, "how long a proxy's poll is held waiting for a client")
	fs.DurationVar(&c.ClientTimeout, "client-timeout", broker.DefaultClientTimeout, "budget of a whole client request, including waiting for the proxy's answer")
	fs.DurationVar(&penalty, "unanswered-penalty", broker.DefaultUnansweredPenalty, "how long a proxy that took a client's offer and sent no answer within -client-timeout is matched after other proxies (per address: IPv4 address, IPv6 /64; each such strike counts for between half of this and all of it); 0 disables")
	fs.Float64Var(&c.ProxyRate, "proxy-rate", broker.DefaultProxyRate, "POST /proxy requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&c.ProxyBurst, "proxy-burst", broker.DefaultProxyBurst, "POST /proxy burst per address")
	fs.Float64Var(&c.ClientRate, "client-rate", broker.DefaultClientRate, "POST /client requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&c.ClientBurst, "client-burst", broker.DefaultClientBurst, "POST /client burst per address")
	fs.Float64Var(&c.AnswerRate, "answer-rate", broker.DefaultAnswerRate, "POST /answer requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&c.AnswerBurst, "answer-burst", broker.DefaultAnswerBurst, "POST /answer burst per address")
	fs.Float64Var(&c.AMPRate, "amp-rate", broker.DefaultAMPRate, "GET /amp/client/ requests per second allowed per address (the AMP cache's, or a client's that skips the cache); negative disables the limit")
	fs.IntVar(&c.AMPBurst, "amp-burst", broker.DefaultAMPBurst, "GET /amp/client/ burst per address")
	fs.Float64Var(&c.PageRate, "page-rate", broker.DefaultPageRate, "requests per second allowed per address (IPv6: per /64) to the operator pages of the public listener, together: GET /, /status, /debug, /metrics (and /prometheus with -public-prometheus); negative disables the limit. The -metrics-addr listener is not limited")
	fs.IntVar(&c.PageBurst, "page-burst", broker.DefaultPageBurst, "operator pages' burst per address")
	const global = ": requests per second over all addresses, bursts of twice that; negative disables the limit"
	fs.Float64Var(&c.ProxyGlobalRate, "proxy-global-rate", broker.DefaultProxyGlobalRate, "POST /proxy"+global)
	fs.Float64Var(&c.ClientGlobalRate, "client-global-rate", broker.DefaultClientGlobalRate, "POST /client"+global)
	fs.Float64Var(&c.AnswerGlobalRate, "answer-global-rate", broker.DefaultAnswerGlobalRate, "POST /answer"+global)
	fs.Float64Var(&c.AMPGlobalRate, "amp-global-rate", broker.DefaultAMPGlobalRate, "GET /amp/client/"+global)
	fs.Float64Var(&c.PageGlobalRate, "page-global-rate", broker.DefaultPageGlobalRate, "the operator pages of the public listener, together"+global)
	fs.Float64Var(&c.SQSGlobalRate, "sqs-global-rate", broker.DefaultSQSGlobalRate, "SQS messages handled (beyond it they are deleted unanswered)"+global)
	fs.IntVar(&c.MaxConnsPerAddr, "max-conns-per-addr", broker.DefaultMaxConnsPerAddr, "most connections one address (IPv6: one /64) holds at once, parked polls included; one more is closed at accept; negative: no limit (-rate-limit-exempt addresses are exempt)")
	fs.BoolVar(&c.DisableRateLimits, "disable-rate-limits", false, "turn every rate limit off, -max-conns-per-addr included (benchmarks on a closed test network only)")
	prefixes(&c.RateLimitExempt, "rate-limit-exempt", "comma-separated CIDRs or addresses no rate limit applies to (none by default: loopback and private addresses are limited too)")
	prefixes(&c.TrustedProxies, "trusted-proxies", "comma-separated CIDRs or addresses of reverse proxies/CDNs whose Forwarded and X-Forwarded-For headers are believed (for rate limits and statistics)")
	fs.StringVar(&o.sqs.QueueName, "broker-sqs-name", "", "Amazon SQS queue to take client poll requests from (created if missing); needs -broker-sqs-region")
	fs.StringVar(&o.sqs.Region, "broker-sqs-region", "", "AWS region of -broker-sqs-name, e.g. us-east-1")
	fs.StringVar(&o.sqsProfiles, "sqs-profiles", "", "comma-separated AWS shared-config profiles: one SQS reader per profile (empty: the SDK's default credentials)")
	fs.StringVar(&o.sqs.Endpoint, "broker-sqs-endpoint", "", "SQS endpoint instead of AWS's, e.g. http://127.0.0.1:4100 (a local SQS-compatible server)")
	fs.StringVar(&c.NATS, "nats", "", "join a cluster of brokers that act as one (docs/cluster.md): NATS server URL, or comma-separated URLs, e.g. tls://10.0.0.5:4222,tls://10.0.0.6:4222 (user:password@ in a URL: credentials; empty: standalone)")
	fs.StringVar(&c.NATSCreds, "nats-creds", "", "NATS credentials file (JWT and NKey seed) for -nats")
	fs.StringVar(&c.NATSNKey, "nats-nkey", "", "file holding a NATS user NKey seed for -nats (not with -nats-creds)")
	fs.StringVar(&c.NATSTLSCA, "nats-tls-ca", "", "PEM file of the CAs of the NATS servers' certificates: TLS to -nats whatever the URLs' scheme")
	fs.BoolVar(&c.NATSInsecure, "nats-insecure", false, "accept a plaintext -nats link (nats://, no -nats-tls-ca) to a server not on loopback without credentials; anyone reaching it could join the brokers and answer clients")
	fs.StringVar(&c.Instance, "instance", "", "this broker's name in the cluster's metrics and logs (A-Z a-z 0-9 . _ -, at most 64); empty: the host name, or \"broker\" if that is not such a name")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-broker (-disable-tls | -cert FILE -key FILE | -acme-hostnames NAMES) [flags]\n\nA Snowflake-compatible rendezvous broker. See docs/broker.md.\n\nFlags:\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), idlemem.Help(quietInterval, allocationWindow))
	}
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.showVersion {
		return c, o, nil // main prints it; nothing else needs to be valid
	}
	c.UnansweredPenalty = penalty
	if penalty <= 0 {
		c.UnansweredPenalty = -1 // 0 disables; Config's zero is the default
	}
	if o.sqs != (broker.SQSConfig{}) || o.sqsProfiles != "" {
		profiles := commalist.Split(o.sqsProfiles)
		if len(profiles) == 0 {
			profiles = []string{""} // the SDK's default credentials
		}
		for _, p := range profiles {
			q := o.sqs
			q.Profile = p
			c.SQS = append(c.SQS, q)
		}
	}
	return c, o, o.tls.Check()
}
