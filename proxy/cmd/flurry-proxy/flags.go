package main

import (
	"flag"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/networkpreset"
	"github.com/flurrypt/flurry/internal/pionruntime"
	"github.com/flurrypt/flurry/proxy"
)

var usageTail = fmt.Sprintf(`
No flag points at a public host: set -broker and -relay, or name a network
with -network; a flag on the command line overrides the network's.

%s
Environment:
  GOMAXPROCS  processors the proxy uses (default %d: enough for a volunteer's
              link; set it higher to relay more than one core carries)
  GOGC        the Go collector's target (default 100: memory first; 400 takes
              about a sixth less CPU per MB relayed for 10-20 MiB more memory)
`, networkpreset.ProxyUsage(), pionruntime.ProxyMaxProcs)

// options are the flags beyond proxy.Config.
type options struct {
	ports, covertConfig, covertFingerprint, logFile, metricsAddress string
	metricsPort                                                     int
	natRetest, summary                                              time.Duration
	metrics, noSummary, unsafeLogging, verbose, logLocalTime        bool
	showVersion                                                     bool
	network                                                         string
	geoipDB, geoip6DB                                               string
}

func parseFlags(fs *flag.FlagSet, args []string) (proxy.Config, *options, error) {
	var c proxy.Config
	var o options
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-proxy (-network NAME | -broker URL -relay URL) [flags]\n\n")
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), usageTail)
	}
	fs.StringVar(&c.BrokerURL, "broker", "", "broker `URL` (required); \"proxy\" and \"answer\" are resolved against it")
	fs.StringVar(&c.RelayURL, "relay", "", "default relay `URL` (wss://), used when the broker names none; checked for reachability at start")
	fs.Func("stun", "comma-separated STUN `URLs`; empty: no STUN server, host candidates only", func(s string) error { c.STUNURLs = commalist.Split(s); return nil })
	fs.IntVar(&c.Capacity, "capacity", 0, "maximum concurrent clients; 0 is unlimited")
	fs.StringVar(&c.AllowedRelayPattern, "allowed-relay-hostname-pattern", "", "relay hostname `pattern` sent to the broker and enforced here; must end with $ (\"^\" prefix = exact); an optional :ports part before the $ lists the relay ports allowed (host:443,8443$, host:*$ for any), else only 443; default: the -relay hostname (and port) followed by $")
	fs.BoolVar(&c.AllowNonTLSRelay, "allow-non-tls-relay", false, "allow ws:// relays (unencrypted)")
	fs.BoolVar(&c.AllowPrivateRelay, "allow-proxying-to-private-addresses", false, "allow relays whose addresses (literal or resolved) are private, loopback or link-local")
	fs.BoolVar(&c.KeepLocalAddresses, "keep-local-addresses", false, "keep private and loopback candidates in answers")
	fs.BoolVar(&c.LoopbackOnly, "loopback-only", false, "gather WebRTC candidates on loopback only, with no STUN and no mDNS (tests and the demo on one machine)")
	fs.StringVar(&c.OutboundAddress, "outbound-address", "", "public `IP` to announce in place of host candidate addresses (not with -keep-local-addresses)")
	fs.StringVar(&o.ports, "ephemeral-ports-range", "", "UDP port range `min:max` for WebRTC; empty: any port")
	fs.StringVar(&c.NATProbeURL, "nat-probe-server", "", "NAT probe `URL` (Snowflake probetest or flurry-natprobe); empty: no probe, NAT type stays unknown")
	fs.DurationVar(&o.natRetest, "nat-retest-interval", proxy.DefaultNATRetestInterval, "time between NAT probes; 0 probes only at start")
	fs.DurationVar(&c.PollInterval, "poll-interval", proxy.DefaultPollInterval, "time between polls when the broker gives none, and first error back-off; at least 1s")
	fs.DurationVar(&o.summary, "summary-interval", proxy.DefaultSummaryInterval, "time between summary log lines; 0 disables them")
	fs.BoolVar(&o.metrics, "metrics", false, "serve Prometheus metrics at /internal/metrics")
	fs.StringVar(&o.metricsAddress, "metrics-address", "localhost", "metrics listen `address`")
	fs.IntVar(&o.metricsPort, "metrics-port", 9999, "metrics listen `port`")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from the log")
	fs.BoolVar(&o.verbose, "verbose", false, "log every session (debug level)")
	fs.StringVar(&o.logFile, "log", "", "append the log to this `file` (created 0600) instead of standard error")
	fs.BoolVar(&o.logLocalTime, "log-local-time", false, "log times in the local time zone instead of UTC")
	fs.BoolVar(&o.noSummary, "disable-stats-logger", false, "no summary log lines (as -summary-interval 0)")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&o.network, "network", "", "join a public `network` by name: its broker, relay, relay pattern, STUN servers and NAT probe (below); flags given override them")
	// Accepted so that Snowflake's command lines keep working; they
	// change nothing here, and the proxy says so at start.
	fs.StringVar(&o.geoipDB, "geoipdb", "", "accepted for compatibility with Snowflake and ignored: this proxy keeps no per-country metrics")
	fs.StringVar(&o.geoip6DB, "geoip6db", "", "accepted for compatibility with Snowflake and ignored, as -geoipdb")
	fs.StringVar(&o.covertConfig, "covertdtls-config", "mimic", "covert DTLS `mode` of the ClientHello the proxy sends: mimic (Chromium's own, the only hello of the censor lab that passes a browsers-only allow list), randomizemimic (a browser's replayed, picked per connection; Snowflake's default), randomize, disable (pion's own, which censors block); see docs/censorship.md")
	fs.StringVar(&o.covertFingerprint, "covertdtls-fingerprint", "", "with -covertdtls-config other than disable: replay this raw ClientHello (`hex`, as Snowflake's)")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if o.showVersion {
		return c, &o, nil // main prints it; nothing else needs to be valid
	}
	if o.network != "" {
		n, err := networkpreset.Lookup(o.network)
		if err == nil {
			err = networkpreset.Apply(fs, n.ProxyFlags())
		}
		if err != nil {
			return c, nil, fmt.Errorf("-network: %w", err)
		}
	}
	if c.BrokerURL == "" || (c.RelayURL == "" && c.AllowedRelayPattern == "") {
		return c, nil, fmt.Errorf("set -broker and -relay (or -allowed-relay-hostname-pattern), or -network NAME.\n%s", usageTail)
	}
	if c.PollInterval < time.Second {
		return c, nil, fmt.Errorf("-poll-interval must be at least 1s")
	}
	var err error
	if c.CovertDTLS, err = covertdtls.Parse(o.covertConfig, o.covertFingerprint); err != nil {
		return c, nil, fmt.Errorf("-covertdtls-config/-covertdtls-fingerprint: %w", err)
	}
	if c.PortMin, c.PortMax, err = proxy.ParsePortRange(o.ports); err != nil {
		return c, nil, err
	}
	// In the flags 0 turns these off; in proxy.Config a negative value does.
	c.NATRetestInterval, c.SummaryInterval = o.natRetest, o.summary
	if o.natRetest == 0 {
		c.NATRetestInterval = -1
	}
	if o.summary == 0 || o.noSummary {
		c.SummaryInterval = -1
	}
	if o.metrics {
		c.MetricsAddress = net.JoinHostPort(o.metricsAddress, strconv.Itoa(o.metricsPort))
	}
	return c, &o, nil
}
