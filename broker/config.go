package broker

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"time"

	"github.com/flurrypt/flurry/broker/internal/bridgelist"
	"github.com/flurrypt/flurry/broker/internal/cluster"
	"github.com/flurrypt/flurry/common/geoip"
	"github.com/flurrypt/flurry/common/relaypattern"
	"github.com/flurrypt/flurry/messages"
)

// Defaults for Config fields left at their zero value.
const (
	// DefaultProxyHold is how long a proxy poll waits for a client
	// (Snowflake's ProxyTimeout).
	DefaultProxyHold = 10 * time.Second
	// DefaultClientTimeout is the whole budget of a client request,
	// including waiting for the proxy's answer (Snowflake's
	// BrokerClientTimeout, calibrated to CDN timeouts).
	DefaultClientTimeout = 5 * time.Second
	// DefaultPollInterval is the NextPoll sent to proxies of both pools.
	DefaultPollInterval = 20 * time.Second
	// RelayPatternPollInterval is the NextPoll sent with "incorrect relay
	// pattern" (Snowflake's MaxPollInterval).
	RelayPatternPollInterval = time.Hour

	// DefaultProxyRate and DefaultProxyBurst limit /proxy per address: a
	// proxy polls about once per NextPoll (20 s), so this leaves room for
	// a hundred proxies behind one address.
	DefaultProxyRate  = 5.0
	DefaultProxyBurst = 100
	// DefaultClientRate and DefaultClientBurst limit /client per address.
	// A client polls about once every 10 to 20 s. Behind a CDN or domain
	// front every client shares the CDN's addresses: set TrustedProxies.
	DefaultClientRate  = 5.0
	DefaultClientBurst = 50
	// DefaultAnswerRate and DefaultAnswerBurst limit /answer per address:
	// a proxy answers at most once per poll.
	DefaultAnswerRate  = DefaultProxyRate
	DefaultAnswerBurst = DefaultProxyBurst
	// DefaultAMPRate and DefaultAMPBurst limit /amp/client/ per address.
	// That address is the AMP cache's (one of many it fetches from), or
	// that of someone who skips the cache.
	DefaultAMPRate  = 5.0
	DefaultAMPBurst = 50
	// DefaultPageRate and DefaultPageBurst limit the operator pages on the
	// rendezvous listener (/, /status, /debug, /metrics and, with
	// PublicPrometheus, /prometheus) per address: one bucket per address
	// for them all. A person reading the status page, or a collector
	// fetching /metrics once a period, stays far below it.
	DefaultPageRate  = 1.0
	DefaultPageBurst = 20

	// Endpoint-wide limits over all addresses (requests per second, and
	// twice that as burst): a ceiling on the broker's work that no number
	// of addresses lifts. A proxy polls about every 20 s, so the /proxy
	// default serves 200 000 proxies; clients are far fewer.
	DefaultProxyGlobalRate  = 10000.0
	DefaultClientGlobalRate = 1000.0
	DefaultAnswerGlobalRate = 1000.0
	DefaultAMPGlobalRate    = 200.0
	DefaultPageGlobalRate   = 100.0
	// DefaultSQSGlobalRate limits the SQS messages handled per second (an
	// SQS message carries no client address to limit it by).
	DefaultSQSGlobalRate = 100.0

	// DefaultRelayURL is the relay of the built-in bridge list:
	// flurry-relay's default listen address, so that a broker and a relay
	// started with defaults on one machine work together.
	DefaultRelayURL = "ws://127.0.0.1:8000/"

	// DefaultUnansweredPenalty is how long a match a proxy left unanswered
	// counts against the proxy's address at most.
	DefaultUnansweredPenalty = time.Hour

	// DefaultListenAddr is where Run listens unless Config.ListenAddr says.
	DefaultListenAddr = "127.0.0.1:8080"
	// DefaultMetricsAddr is flurry-broker's -metrics-addr: the operator
	// listener (Config.MetricsAddr) on loopback, out of reach of the
	// public. (Config's zero value runs no operator listener, so that
	// brokers in one process do not fight over a port.)
	DefaultMetricsAddr = "127.0.0.1:9110"
	// DefaultReadHeaderTimeout and DefaultIdleTimeout bound a request's
	// header and an idle keep-alive connection.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultIdleTimeout       = 60 * time.Second
	// DefaultMaxConnsPerAddr is how many connections one address (IPv6:
	// one /64) may hold at once unless Config.MaxConnsPerAddr says: far
	// above what the proxies and clients behind one NAT hold (each proxy
	// holds one poll at a time), far below the file limit.
	DefaultMaxConnsPerAddr = 512
	// shutdownGrace is added to ClientTimeout for the default
	// ShutdownTimeout: the clients in flight finish.
	shutdownGrace = 5 * time.Second

	// DefaultMetricsInterval is the period of the metrics descriptor
	// (Snowflake's 24 hours).
	DefaultMetricsInterval = 24 * time.Hour
	// minMetricsInterval is the shortest period: the descriptor states it
	// in whole seconds.
	minMetricsInterval = time.Second
)

// Bridge is one bridge of Config.Bridges: the fields of a line of the
// bridge list file.
type Bridge = bridgelist.Entry

// Config configures a Broker. The zero value is a working broker with
// Snowflake's timings, one bridge (DefaultRelayURL) and the default rate
// limits on every rendezvous path.
type Config struct {
	// ListenAddr is the TCP address Run listens on. Empty means
	// DefaultListenAddr. Serve ignores it.
	ListenAddr string
	// TLSConfig, if not nil, makes Run and Serve speak TLS (done by
	// Listener: put "h2" in NextProtos to offer HTTP/2). Nil: plain HTTP,
	// behind a TLS-terminating front end or for tests.
	TLSConfig *tls.Config
	// MetricsAddr, if set, is where Run serves OperatorHandler (GET
	// /prometheus, /debug, /metrics, /status, /healthz) on a plain-HTTP
	// listener of its own, without the per-address limits of the public
	// listener. Empty: no such listener. flurry-broker sets it to
	// DefaultMetricsAddr unless told otherwise. Keep it on loopback or
	// behind a firewall: it is meant for the operator only.
	MetricsAddr string
	// SQS lists the SQS queues Run and Serve take client polls from, one
	// reader each (see RunSQS).
	SQS []SQSConfig
	// ReadHeaderTimeout bounds the reading of a request's header, and
	// IdleTimeout the wait for a keep-alive connection's next request.
	// Zero means DefaultReadHeaderTimeout and DefaultIdleTimeout. The read
	// and write timeouts follow from ProxyHold and ClientTimeout: they must
	// outlast the longest long-poll.
	ReadHeaderTimeout time.Duration
	IdleTimeout       time.Duration
	// MaxConnsPerAddr caps the connections one address (IPv4 address,
	// IPv6 /64; the TCP peer's) holds at once on the rendezvous listener,
	// whether in net/http or parked. One more is closed
	// at accept, before it is read, and counted
	// (flurry_broker_connections_refused_total). Zero means
	// DefaultMaxConnsPerAddr; negative means no limit. RateLimitExempt
	// prefixes are exempt, and DisableRateLimits turns it off.
	//
	// When the listener's connections reach three quarters of the
	// process's file limit, an address may take another only while it
	// holds less than its fair share (that mark over the addresses holding
	// any), so that a few addresses cannot hold the descriptors that new
	// peers need.
	MaxConnsPerAddr int
	// ShutdownTimeout bounds the wait for the requests in flight when Run
	// or Serve stops. Zero means ClientTimeout plus five seconds.
	ShutdownTimeout time.Duration

	// BridgeListPath is a bridge list file (Snowflake's NDJSON format, see
	// internal/bridgelist). Empty: one bridge, Snowflake's default
	// fingerprint (messages.DefaultBridgeFingerprint) at DefaultRelayURL.
	BridgeListPath string
	// Bridges is the bridge list given in memory instead of a file (for
	// programs and tests that embed a broker); each entry is checked as a
	// line of the file is. At most one of Bridges and BridgeListPath.
	Bridges []Bridge

	// AllowedRelayPattern, when set, is Snowflake's -allowed-relay-pattern:
	// a proxy is accepted only if its AcceptedRelayPattern is a superset of
	// it, and every bridge's relay host must match it. Empty (the default)
	// differs from Snowflake, which then rejects every proxy that sends a
	// non-empty pattern (docs/design.md, weakness 14): here a proxy is
	// accepted if its pattern accepts at least one bridge.
	//
	// Either way a proxy is only ever matched with clients whose bridge its
	// own pattern accepts.
	AllowedRelayPattern string

	// PollIntervalPath is a JSON file with the NextPoll of each pool, in
	// milliseconds (Snowflake's format), reloaded by ReloadPollIntervals:
	//	{"unrestricted_poll_interval": 20000, "restricted_poll_interval": 20000}
	// A missing key means PollInterval; values must be 1 s to 1 h.
	PollIntervalPath string
	// PollInterval is the NextPoll of both pools when PollIntervalPath does
	// not set it. Zero means DefaultPollInterval.
	PollInterval time.Duration

	// ProxyHold is how long a proxy poll is held waiting for a client.
	// Zero means DefaultProxyHold.
	ProxyHold time.Duration
	// ClientTimeout is the budget of a whole client request. Zero means
	// DefaultClientTimeout.
	ClientTimeout time.Duration

	// Rate limits, per address then endpoint-wide, of each rendezvous
	// path. A request's address is its TCP peer, or what the forwarding
	// headers name when the peer is in TrustedProxies; loopback and private
	// peers are limited like any other. IPv6 addresses are limited per /64.
	//
	// ProxyRate (requests per second) and ProxyBurst limit POST /proxy per
	// address. Zero means the default; a negative rate disables the limit.
	ProxyRate  float64
	ProxyBurst int
	// ClientRate and ClientBurst limit POST /client likewise.
	ClientRate  float64
	ClientBurst int
	// AnswerRate and AnswerBurst limit POST /answer likewise.
	AnswerRate  float64
	AnswerBurst int
	// AMPRate and AMPBurst limit GET /amp/client/ likewise.
	AMPRate  float64
	AMPBurst int
	// PageRate and PageBurst limit the operator pages of Handler (GET /,
	// /status, /debug, /metrics, and /prometheus with PublicPrometheus)
	// per address, one bucket per address for all of them. Zero means
	// DefaultPageRate and DefaultPageBurst; a negative rate disables the
	// limit. OperatorHandler is not limited.
	PageRate  float64
	PageBurst int
	// ProxyGlobalRate, ClientGlobalRate, AnswerGlobalRate, AMPGlobalRate
	// and PageGlobalRate limit each endpoint (the operator pages together)
	// over all addresses, SQSGlobalRate the SQS
	// messages handled, with bursts of twice the rate. A request refused
	// per address does not count against its endpoint's limit. Zero means
	// the default; negative disables the limit.
	ProxyGlobalRate  float64
	ClientGlobalRate float64
	AnswerGlobalRate float64
	AMPGlobalRate    float64
	PageGlobalRate   float64
	SQSGlobalRate    float64
	// DisableRateLimits turns every rate limit off, whatever the fields
	// above say: for benchmarks on a closed test network only.
	DisableRateLimits bool
	// RateLimitExempt lists prefixes that no rate limit applies to (a
	// monitoring host, say). Empty by default: nothing is exempt.
	RateLimitExempt []netip.Prefix
	// RateLimitEntries bounds each limiter's address table. Zero means
	// 65536.
	RateLimitEntries int

	// UnansweredPenalty is how long a proxy is matched after others for
	// leaving a client unanswered: a proxy that took a client's offer and
	// had sent no answer when the client's time (ClientTimeout) ran out gets
	// a strike against its address (IPv4 address, IPv6 /64), and proxies
	// with fewer strikes are matched first (three or more count as three).
	// A strike counts for more than half of UnansweredPenalty and at most
	// all of it. A client that leaves early strikes nobody. Zero means
	// DefaultUnansweredPenalty; negative disables the penalty. Addresses
	// are never stored, only keyed hashes (internal/strikes).
	UnansweredPenalty time.Duration

	// TrustedProxies are the reverse proxies and CDNs whose Forwarded and
	// X-Forwarded-For headers are believed. Empty: the client address is
	// always RemoteAddr.
	TrustedProxies []netip.Prefix

	// GeoIP maps proxy and client addresses to countries for the
	// statistics (Prometheus, the metrics descriptor). Nil means every
	// address counts as country "??"; unlike Snowflake, proxy address
	// statistics are still kept. ReloadGeoIP re-reads its files.
	GeoIP *geoip.DB
	// MetricsLogPath is the file each period's metrics descriptor is
	// appended to, and the file GET /metrics serves. Empty means the
	// descriptors are logged (level Info) and /metrics answers 404, as in
	// Snowflake. New fails if the file cannot be opened for appending.
	MetricsLogPath string
	// MetricsInterval is the descriptor period, counted from Run (or Serve). Zero
	// means DefaultMetricsInterval; otherwise at least one second.
	MetricsInterval time.Duration
	// IPCountPrefix, if set, counts the distinct addresses of polling
	// proxies per IPCountInterval (0: one hour) into six files named
	// <IPCountPrefix>-<category>-<start>.log, as Snowflake's
	// -ip-count-prefix; only keyed hashes are held and counts are binned
	// (internal/ipcount). Run (or Serve) writes them.
	IPCountPrefix   string
	IPCountInterval time.Duration
	// PublicPrometheus puts GET /prometheus in Handler too, that is on the
	// public (rendezvous) listener, limited per address as the other
	// operator pages (PageRate). Off by default: Prometheus scrapes
	// OperatorHandler (MetricsAddr), where nobody else can crowd it out.
	PublicPrometheus bool
	// WebProxyDir, if set, is a directory whose files Handler serves
	// under /webproxy/: the browser proxy's badge and test page, as
	// make webproxy builds them (out/webproxy/web). Empty: no such path.
	WebProxyDir string
	// Version is the version the status page shows. Empty means the main
	// module's version from the binary's build information.
	Version string

	// NATS, when set, joins this broker to a cluster of brokers that act
	// as one (docs/cluster.md): the NATS server URL, or comma-separated
	// URLs of a NATS cluster's servers. Every instance must have the same
	// bridge list. Empty: a standalone broker.
	NATS string
	// NATSCreds is a NATS credentials file (JWT and NKey seed) for NATS;
	// empty for none.
	NATSCreds string
	// NATSNKey is a file holding a NATS user NKey seed; empty for none.
	// Not with NATSCreds.
	NATSNKey string
	// NATSTLSCA is a PEM file of the CAs that sign the NATS servers'
	// certificates; it makes the NATS link TLS whatever the URLs' scheme.
	// Empty: TLS only with tls:// URLs, verified with the system's CAs.
	NATSTLSCA string
	// NATSInsecure accepts a plaintext NATS link (nats:// URLs and no
	// NATSTLSCA) to a server that is not on loopback without credentials
	// (NATSCreds, NATSNKey, or user:password@ or token@ in the URL): anyone
	// who reaches that server could join the brokers' queue group, take
	// clients' offers and answer them. Without it New refuses such a link.
	NATSInsecure bool
	// Instance names this broker in the cluster's metrics and logs: 1 to
	// 64 of A-Z a-z 0-9 . _ -. Empty means DefaultInstance().
	Instance string

	// Logger receives the broker's logs; nil discards them. The broker never
	// logs an address itself, but wrap the handler with safelog anyway.
	Logger *slog.Logger
}

// settings are a Config with its defaults filled in, validated, and the
// values New needs parsed.
type settings struct {
	Config
	allowed *relaypattern.Pattern // nil: AllowedRelayPattern empty
	// natsExposure is how exposed the NATS link is, and natsRemote its
	// first server not on loopback (cluster.Config.Exposure).
	natsExposure cluster.Exposure
	natsRemote   string
}

// settle fills in c's defaults, validates it and parses what needs parsing,
// once; its errors wrap ErrInvalidConfig.
func (c Config) settle() (*settings, error) {
	if c.ProxyHold == 0 {
		c.ProxyHold = DefaultProxyHold
	}
	if c.ClientTimeout == 0 {
		c.ClientTimeout = DefaultClientTimeout
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	c.setRateLimitDefaults()
	if c.WebProxyDir != "" {
		if fi, err := os.Stat(c.WebProxyDir); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%w: web proxy directory %q is not a directory", ErrInvalidConfig, c.WebProxyDir)
		}
	}
	if c.MetricsInterval == 0 {
		c.MetricsInterval = DefaultMetricsInterval
	}
	if c.UnansweredPenalty == 0 {
		c.UnansweredPenalty = DefaultUnansweredPenalty
	}
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if c.ReadHeaderTimeout == 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = DefaultMaxConnsPerAddr
	}
	if c.MaxConnsPerAddr < 0 || c.DisableRateLimits {
		c.MaxConnsPerAddr = -1
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = c.ClientTimeout + shutdownGrace
	}
	if c.TLSConfig != nil {
		c.TLSConfig = c.TLSConfig.Clone()
	}
	c.SQS = append([]SQSConfig(nil), c.SQS...)
	for i, q := range c.SQS {
		var err error
		if c.SQS[i], err = q.withDefaults(); err != nil {
			return nil, err
		}
	}
	if c.Instance == "" {
		c.Instance = DefaultInstance()
	}
	if !ValidInstance(c.Instance) {
		return nil, fmt.Errorf("%w: %w: instance name %q: 1 to 64 of A-Z a-z 0-9 . _ -", ErrInvalidConfig, errCluster, c.Instance)
	}
	c.TrustedProxies = append([]netip.Prefix(nil), c.TrustedProxies...)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}

	switch {
	case c.BridgeListPath != "" && len(c.Bridges) > 0:
		return nil, fmt.Errorf("%w: both a bridge list file and in-memory bridges", ErrInvalidConfig)
	case c.ProxyHold < 0:
		return nil, fmt.Errorf("%w: proxy hold %v is negative", ErrInvalidConfig, c.ProxyHold)
	case c.ClientTimeout < 0:
		return nil, fmt.Errorf("%w: client timeout %v is negative", ErrInvalidConfig, c.ClientTimeout)
	case c.PollInterval < minPollInterval || c.PollInterval > maxPollInterval:
		return nil, fmt.Errorf("%w: poll interval %v is outside %v to %v", ErrInvalidConfig, c.PollInterval, minPollInterval, maxPollInterval)
	case c.ProxyBurst < 0 || c.ClientBurst < 0 || c.AnswerBurst < 0 || c.AMPBurst < 0 || c.PageBurst < 0:
		return nil, fmt.Errorf("%w: negative rate limit burst", ErrInvalidConfig)
	case c.RateLimitEntries < 0:
		return nil, fmt.Errorf("%w: negative rate limit table size", ErrInvalidConfig)
	case c.ReadHeaderTimeout < 0 || c.IdleTimeout < 0 || c.ShutdownTimeout < 0:
		return nil, fmt.Errorf("%w: negative server timeout", ErrInvalidConfig)
	case (c.NATSCreds != "" || c.NATSNKey != "" || c.NATSTLSCA != "") && c.NATS == "":
		return nil, fmt.Errorf("%w: NATS credentials or TLS CA without a NATS server", ErrInvalidConfig)
	case c.NATSCreds != "" && c.NATSNKey != "":
		return nil, fmt.Errorf("%w: %w: both a NATS credentials file and an NKey seed file", ErrInvalidConfig, errCluster)
	case c.MetricsInterval < minMetricsInterval:
		return nil, fmt.Errorf("%w: metrics interval %v is shorter than %v", ErrInvalidConfig, c.MetricsInterval, minMetricsInterval)
	}
	s := &settings{Config: c}
	if c.NATS != "" {
		var err error
		if s.natsExposure, s.natsRemote, err = c.clusterConfig().Exposure(); err != nil {
			return nil, fmt.Errorf("%w: %w: %w", ErrInvalidConfig, errCluster, err)
		}
		if s.natsExposure == cluster.Open && !c.NATSInsecure {
			return nil, fmt.Errorf("%w: %w: plaintext NATS link to %s without credentials: use tls:// or a NATS TLS CA, or credentials (a creds or NKey seed file, or user:password@ in the URL); NATSInsecure accepts it", ErrInvalidConfig, errCluster, s.natsRemote)
		}
	}
	if c.AllowedRelayPattern != "" {
		p, err := relaypattern.Parse(c.AllowedRelayPattern)
		if err != nil {
			return nil, fmt.Errorf("%w: allowed relay pattern: %w", ErrInvalidConfig, err)
		}
		s.allowed = &p
	}
	for _, p := range c.RateLimitExempt {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: invalid rate limit exemption", ErrInvalidConfig)
		}
	}
	for _, p := range c.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: invalid trusted proxy prefix", ErrInvalidConfig)
		}
	}
	return s, nil
}

// defaultBridgeFingerprint is the fingerprint of the built-in bridge.
const defaultBridgeFingerprint = messages.DefaultBridgeFingerprint
