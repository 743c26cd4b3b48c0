// Command flurry-proxy is a Flurry proxy: it polls a broker for censored
// clients, accepts their WebRTC connections and relays them to a relay
// (a Snowflake bridge). Flags use Snowflake's names; see docs/proxy.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/networkpreset"
	"github.com/flurrypt/flurry/internal/pionruntime"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/proxy"
)

var usageTail = fmt.Sprintf(`
No flag points at a public host: set -broker and -relay, or name a network
with -network; a flag on the command line overrides the network's.

%s
Environment:
  GOMAXPROCS  processors the proxy uses (default %d: enough for a volunteer's
              link; set it higher to relay more than one core carries)
  GOGC        the Go collector's target (default %d: less CPU per MB relayed)
`, networkpreset.ProxyUsage(), pionruntime.MaxProcs, pionruntime.GCPercent)

func main() {
	pionruntime.Apply()
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("flurry-proxy", flag.ContinueOnError)
	var (
		broker         = fs.String("broker", "", "broker `URL` (required); \"proxy\" and \"answer\" are resolved against it")
		relay          = fs.String("relay", "", "default relay `URL` (wss://), used when the broker names none; checked for reachability at start")
		stun           = fs.String("stun", "", "comma-separated STUN `URLs`; empty: no STUN server, host candidates only")
		capacity       = fs.Int("capacity", 0, "maximum concurrent clients; 0 is unlimited")
		pattern        = fs.String("allowed-relay-hostname-pattern", "", "relay hostname `pattern` sent to the broker and enforced here; must end with $ (\"^\" prefix = exact); an optional :ports part before the $ lists the relay ports allowed (host:443,8443$, host:*$ for any), else only 443; default: the -relay hostname (and port) followed by $")
		nonTLS         = fs.Bool("allow-non-tls-relay", false, "allow ws:// relays (unencrypted)")
		private        = fs.Bool("allow-proxying-to-private-addresses", false, "allow relays whose addresses (literal or resolved) are private, loopback or link-local")
		keepLocal      = fs.Bool("keep-local-addresses", false, "keep private and loopback candidates in answers")
		loopbackOnly   = fs.Bool("loopback-only", false, "gather WebRTC candidates on loopback only, with no STUN and no mDNS (tests and the demo on one machine)")
		outbound       = fs.String("outbound-address", "", "public `IP` to announce in place of host candidate addresses (not with -keep-local-addresses)")
		ports          = fs.String("ephemeral-ports-range", "", "UDP port range `min:max` for WebRTC; empty: any port")
		natProbe       = fs.String("nat-probe-server", "", "NAT probe `URL` (Snowflake probetest or flurry-natprobe); empty: no probe, NAT type stays unknown")
		natRetest      = fs.Duration("nat-retest-interval", proxy.DefaultNATRetestInterval, "time between NAT probes; 0 probes only at start")
		pollInterval   = fs.Duration("poll-interval", proxy.DefaultPollInterval, "time between polls when the broker gives none, and first error back-off; at least 1s")
		summary        = fs.Duration("summary-interval", proxy.DefaultSummaryInterval, "time between summary log lines; 0 disables them")
		metrics        = fs.Bool("metrics", false, "serve Prometheus metrics at /internal/metrics")
		metricsAddress = fs.String("metrics-address", "localhost", "metrics listen `address`")
		metricsPort    = fs.Int("metrics-port", 9999, "metrics listen `port`")
		unsafeLogging  = fs.Bool("unsafe-logging", false, "do not scrub IP addresses from the log")
		verbose        = fs.Bool("verbose", false, "log every session (debug level)")
		logFile        = fs.String("log", "", "append the log to this `file` (created 0600) instead of standard error")
		logLocalTime   = fs.Bool("log-local-time", false, "log times in the local time zone instead of UTC")
		noSummary      = fs.Bool("disable-stats-logger", false, "no summary log lines (as -summary-interval 0)")
		showVersion    = fs.Bool("version", false, "print the version and exit")
		network        = fs.String("network", "", "join a public `network` by name: its broker, relay, relay pattern, STUN servers and NAT probe (below); flags given override them")
		// Accepted so that Snowflake's command lines keep working; they
		// change nothing here, and the proxy says so at start.
		geoipDB           = fs.String("geoipdb", "", "accepted for compatibility with Snowflake and ignored: this proxy keeps no per-country metrics")
		geoip6DB          = fs.String("geoip6db", "", "accepted for compatibility with Snowflake and ignored, as -geoipdb")
		covertConfig      = fs.String("covertdtls-config", "mimic", "covert DTLS `mode` of the ClientHello the proxy sends: mimic (Chromium's own, the only hello of the censor lab that passes a browsers-only allow list), randomizemimic (a browser's replayed, picked per connection; Snowflake's default), randomize, disable (pion's own, which censors block); see docs/censorship.md")
		covertFingerprint = fs.String("covertdtls-fingerprint", "", "with -covertdtls-config other than disable: replay this raw ClientHello (`hex`, as Snowflake's)")
	)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-proxy (-network NAME | -broker URL -relay URL) [flags]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageTail)
	}
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Println(version.Line("flurry-proxy"))
		return 0
	}
	if *network != "" {
		n, err := networkpreset.Lookup(*network)
		if err == nil {
			err = networkpreset.Apply(fs, n.ProxyFlags())
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "flurry-proxy: -network:", err)
			return 2
		}
	}
	if *broker == "" || (*relay == "" && *pattern == "") {
		fmt.Fprintln(os.Stderr, "flurry-proxy: set -broker and -relay (or -allowed-relay-hostname-pattern), or -network NAME.")
		fmt.Fprint(os.Stderr, usageTail)
		return 2
	}
	if *pollInterval < time.Second {
		fmt.Fprintln(os.Stderr, "flurry-proxy: -poll-interval must be at least 1s")
		return 2
	}

	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	out := os.Stderr
	if *logFile != "" {
		f, err := servercmd.OpenLogFile(*logFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "flurry-proxy: -log:", err)
			return 2
		}
		defer f.Close()
		out = f
	}
	log := servercmd.NewLogger(out, servercmd.LogOptions{Level: level, Unsafe: *unsafeLogging, LocalTime: *logLocalTime})
	covert, err := covertdtls.Parse(*covertConfig, *covertFingerprint)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy: -covertdtls-config/-covertdtls-fingerprint:", err)
		return 2
	}
	for name, v := range map[string]string{"geoipdb": *geoipDB, "geoip6db": *geoip6DB} {
		if v != "" {
			log.Info("flag ignored: accepted for compatibility with Snowflake only", "flag", "-"+name)
		}
	}

	cfg := proxy.Config{
		BrokerURL:           *broker,
		RelayURL:            *relay,
		AllowedRelayPattern: *pattern,
		AllowNonTLSRelay:    *nonTLS,
		AllowPrivateRelay:   *private,
		Capacity:            *capacity,
		KeepLocalAddresses:  *keepLocal,
		LoopbackOnly:        *loopbackOnly,
		CovertDTLS:          covert,
		OutboundAddress:     *outbound,
		NATProbeURL:         *natProbe,
		NATRetestInterval:   *natRetest,
		PollInterval:        *pollInterval,
		SummaryInterval:     *summary,
		Logger:              log,
	}
	cfg.STUNURLs = commalist.Split(*stun)
	if *natRetest == 0 {
		cfg.NATRetestInterval = -1
	}
	if *summary == 0 || *noSummary {
		cfg.SummaryInterval = -1
	}
	if cfg.PortMin, cfg.PortMax, err = proxy.ParsePortRange(*ports); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy:", err)
		return 2
	}
	if *metrics {
		cfg.MetricsAddress = net.JoinHostPort(*metricsAddress, strconv.Itoa(*metricsPort))
	}
	if cfg.PortMin != 0 {
		width := int(cfg.PortMax-cfg.PortMin) + 1
		assumed := *capacity
		if assumed <= 0 {
			assumed = 10 // unlimited: as docs/proxy.md says
		}
		if width < 2*assumed {
			log.Warn("the ephemeral port range may be too narrow for the capacity", "ports", width, "clients", assumed)
		}
	}
	if len(cfg.STUNURLs) == 0 && !*keepLocal && *outbound == "" {
		log.Warn("no -stun server and no -outbound-address: answers will only carry public host candidates; behind a NAT this proxy can serve no client (each match fails with \"no public ICE candidate\")")
	}

	p, err := proxy.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-proxy:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := p.Run(ctx); err != nil {
		log.Error("proxy stopped", "err", err)
		return 1
	}
	return 0
}
