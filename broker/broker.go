package broker

import (
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/broker/internal/bridgelist"
	"github.com/flurrypt/flurry/broker/internal/cluster"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/ipcount"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/broker/internal/statuspage"
	"github.com/flurrypt/flurry/broker/internal/strikes"
	"github.com/flurrypt/flurry/common/relaypattern"
	"github.com/flurrypt/flurry/internal/clientaddr"
	"github.com/flurrypt/flurry/messages"
)

// pool indexes for per-pool state.
const (
	poolRestricted   = 0 // proxies with restricted or unknown NAT
	poolUnrestricted = 1
)

// Broker is a Snowflake-compatible rendezvous broker. Create it with New,
// then Run it (or Serve it on a listener of your own) until its context
// ends.
type Broker struct {
	cfg     Config
	sink    event.Sink
	stats   *stats.Recorder
	ipCount *ipcount.Counter // nil without Config.IPCountPrefix
	page    *statuspage.Page
	bridges *bridgelist.List
	allowed *relaypattern.Pattern // nil: AllowedRelayPattern empty
	match   *matcher.Matcher
	addrs   *clientaddr.Resolver
	// warnForwarding logs once that a local peer's forwarding headers
	// were ignored (a reverse proxy missing from TrustedProxies).
	warnForwarding sync.Once

	limits limits // rate limits of the rendezvous paths
	// strikes keys every proxy poll by its address and, when penalise,
	// counts the matches each address left unanswered.
	strikes  *strikes.Table
	penalise bool // Config.UnansweredPenalty > 0

	reloadMu sync.Mutex              // serialises ReloadPollIntervals
	pools    [2]atomic.Pointer[pool] // per-pool NextPoll state, replaced on reload
	bufs     sync.Pool               // *[]byte request body buffers
	small    sync.Pool               // *[]byte buffers for bodies under smallBody bytes
	fixed    fixedResponses          // immutable after New
	cors     [2][]string             // header values, never modified
	allow    []string                // Allow header value, never modified
	ctype    []string                // Content-Type header value, never modified
	shutOnce sync.Once               // guards Close
	parks    parkSet                 // parked polls and idle connections
	cluster  *cluster.Cluster        // nil without Config.NATS
	// parkAfter: see defaultParkAfter (tests change it before serving).
	parkAfter time.Duration
	// acceptLogged is when a failed accept was last logged (UnixNano).
	acceptLogged atomic.Int64
}

// defaultParkAfter is how long a proxy poll that can be parked (see
// Listener) first waits for a client in its handler while clients are
// being matched (one was, less than defaultParkAfter ago). Parking costs a
// hijack and, when the connection comes back, a new net/http connection
// goroutine: under heavy load most polls are matched sooner than this and
// skip that cost, while a poll that waits its whole hold (10 s) spends 1%
// of it in the handler. With no recent match, polls are parked at once.
const defaultParkAfter = 100 * time.Millisecond

// matchingNow reports whether a client took a proxy less than parkAfter
// ago (by any rendezvous method).
func (b *Broker) matchingNow() bool {
	d := b.match.SinceLastMatch()
	return b.parkAfter > 0 && d >= 0 && d < b.parkAfter
}

// pool is the reloadable state of one NAT pool.
type pool struct {
	nextPoll int64  // milliseconds
	noMatch  []byte // encoded "no match" response carrying nextPoll
}

// probeOffer is a minimal session description used to check that a relay
// URL can be encoded in a proxy poll response.
const probeOffer = `{"type":"offer","sdp":"v=0\\r\\n"}`

// fixedResponses are response bodies encoded once.
type fixedResponses struct {
	incorrectPattern []byte // proxy poll: "incorrect relay pattern"
	noProxies        []byte // client: StrNoProxies
	timedOut         []byte // client: StrTimedOut
	unknownBridge    []byte // client: StrUnknownBridge
	answerSuccess    []byte // answer: success
	answerGone       []byte // answer: client gone
}

// clientError returns the client response body for an outcome without an
// answer: ClientDenied, ClientTimeout or ClientUnknownBridge.
func (f *fixedResponses) clientError(o event.ClientOutcome) []byte {
	switch o {
	case event.ClientDenied:
		return f.noProxies
	case event.ClientTimeout:
		return f.timedOut
	default:
		return f.unknownBridge
	}
}

// Stats is a snapshot of the proxies the broker holds.
type Stats struct {
	WaitingRestricted   int // restricted- or unknown-NAT proxies waiting
	WaitingUnrestricted int // unrestricted-NAT proxies waiting
	Matched             int // proxies matched, answer not yet delivered
}

// New validates cfg, loads the bridge list and poll-interval file, and
// returns a Broker ready to serve.
func New(cfg Config) (*Broker, error) {
	return newBroker(cfg, nil)
}

// newBroker is New with an extra event sink (nil = none) that sees every
// event after the statistics do.
func newBroker(cfg Config, extra event.Sink) (*Broker, error) {
	started := time.Now()
	set, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	cfg = set.Config
	rec, err := stats.New(stats.Config{
		GeoIP:          cfg.GeoIP,
		MetricsLogPath: cfg.MetricsLogPath,
		Interval:       cfg.MetricsInterval,
		Logger:         cfg.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMetrics, err)
	}
	sink := rec.Sink()
	var ipCount *ipcount.Counter
	if cfg.IPCountPrefix != "" {
		if ipCount, err = ipcount.New(ipcount.Config{Prefix: cfg.IPCountPrefix, Interval: cfg.IPCountInterval}); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMetrics, err)
		}
		sink = event.Tee(sink, ipCount)
	}
	if extra != nil {
		sink = event.Tee(sink, extra)
	}
	b := &Broker{
		cfg:     cfg,
		sink:    sink,
		stats:   rec,
		ipCount: ipCount,
		match:   matcher.New(),
		addrs:   clientaddr.New(cfg.TrustedProxies),
		cors:    [2][]string{{corsOrigin}, {corsHeaders}},
		allow:   []string{"OPTIONS, POST"},
		ctype:   []string{textPlain},

		parkAfter: defaultParkAfter,
	}
	b.allowed = set.allowed
	if err := b.loadBridges(); err != nil {
		return nil, err
	}
	bridges := make([]statuspage.Bridge, b.bridges.Len())
	for i := range bridges {
		br := b.bridges.At(i)
		bridges[i] = statuspage.Bridge{Fingerprint: fmt.Sprintf("%X", br.Fingerprint), URL: br.WebSocketAddress}
	}
	if b.page, err = statuspage.New(statuspage.Config{Stats: rec, Bridges: bridges, Version: cfg.Version, Start: started}); err != nil {
		return nil, fmt.Errorf("%w: status page: %w", ErrMetrics, err)
	}

	b.limits = newLimits(cfg, time.Now)
	// The table also gives proxies their keys when the penalty is off, so
	// that unanswered matches are still counted in the statistics.
	b.penalise = cfg.UnansweredPenalty > 0
	if b.strikes, err = strikes.New(strikes.Config{Period: max(cfg.UnansweredPenalty, 0)}); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}

	if err := b.encodeFixed(); err != nil {
		return nil, err
	}
	pi := pollIntervals{restricted: cfg.PollInterval, unrestricted: cfg.PollInterval}
	if cfg.PollIntervalPath != "" {
		if pi, err = readPollIntervals(cfg.PollIntervalPath, cfg.PollInterval); err != nil {
			return nil, err
		}
	}
	if err := b.setPollIntervals(pi); err != nil {
		return nil, err
	}
	b.bufs.New = func() any {
		buf := make([]byte, 0, initialBodyBuffer)
		return &buf
	}
	b.small.New = func() any {
		buf := make([]byte, 0, smallBody)
		return &buf
	}
	if err := b.startCluster(set); err != nil {
		return nil, err
	}
	v4, v6 := cfg.GeoIP.Table().Len()
	cfg.Logger.Info("broker ready",
		"bridges", b.bridges.Len(),
		"geoip_ipv4_ranges", v4,
		"geoip_ipv6_ranges", v6,
		"metrics_log", cfg.MetricsLogPath != "",
		"metrics_interval", cfg.MetricsInterval,
		"allowed_relay_pattern", cfg.AllowedRelayPattern,
		"proxy_hold", cfg.ProxyHold,
		"client_timeout", cfg.ClientTimeout,
		"unanswered_penalty", max(cfg.UnansweredPenalty, 0),
		"poll_interval_restricted", pi.restricted,
		"poll_interval_unrestricted", pi.unrestricted,
		"cluster", cfg.NATS != "")
	return b, nil
}

// loadBridges reads the bridge list (or builds the default) and checks it
// against the allowed relay pattern.
func (b *Broker) loadBridges() error {
	var (
		l   *bridgelist.List
		err error
	)
	switch {
	case len(b.cfg.Bridges) > 0:
		l, err = bridgelist.FromEntries(b.cfg.Bridges...)
	case b.cfg.BridgeListPath == "":
		l, err = bridgelist.FromEntries(bridgelist.Entry{DisplayName: "default", Fingerprint: defaultBridgeFingerprint, WebSocketAddress: DefaultRelayURL})
	default:
		var f *os.File
		f, err = os.Open(b.cfg.BridgeListPath)
		if err == nil {
			l, err = bridgelist.Parse(f)
			f.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %w", ErrBridgeList, err)
	}
	if l.Len() > matcher.MaxBridges {
		return fmt.Errorf("%w: more than %d bridges", ErrBridgeList, matcher.MaxBridges)
	}
	for i := range l.Len() {
		br := l.At(i)
		if b.allowed != nil && !b.allowed.Match(br.Host) {
			return fmt.Errorf("%w: relay %s is not allowed by the allowed relay pattern %s", ErrBridgeList, br.WebSocketAddress, b.allowed)
		}
		// The relay URL must be one a proxy poll response can carry.
		probe := messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: probeOffer, RelayURL: br.WebSocketAddress}
		if _, err := probe.Encode(); err != nil {
			return fmt.Errorf("%w: relay URL %q: %w", ErrBridgeList, br.WebSocketAddress, err)
		}
	}
	b.bridges = l
	return nil
}

func (b *Broker) encodeFixed() error {
	var err error
	enc := func(dst *[]byte, m interface{ Encode() ([]byte, error) }) {
		if err == nil {
			*dst, err = m.Encode()
		}
	}
	enc(&b.fixed.incorrectPattern, messages.ProxyPollResponse{Status: messages.StatusIncorrectRelayPattern, NextPoll: RelayPatternPollInterval.Milliseconds()})
	enc(&b.fixed.noProxies, messages.ClientPollResponse{Error: messages.StrNoProxies})
	enc(&b.fixed.timedOut, messages.ClientPollResponse{Error: messages.StrTimedOut})
	enc(&b.fixed.unknownBridge, messages.ClientPollResponse{Error: messages.StrUnknownBridge})
	enc(&b.fixed.answerSuccess, messages.ProxyAnswerResponse{Status: messages.StatusSuccess})
	enc(&b.fixed.answerGone, messages.ProxyAnswerResponse{Status: messages.StatusClientGone})
	if err != nil {
		return fmt.Errorf("encode fixed responses: %w", err)
	}
	return nil
}

// setPollIntervals installs new NextPoll values.
func (b *Broker) setPollIntervals(pi pollIntervals) error {
	for i, d := range [2]time.Duration{poolRestricted: pi.restricted, poolUnrestricted: pi.unrestricted} {
		ms := d.Milliseconds()
		nm, err := messages.ProxyPollResponse{Status: messages.StatusNoMatch, NextPoll: ms}.Encode()
		if err != nil {
			return fmt.Errorf("encode no-match response: %w", err)
		}
		b.pools[i].Store(&pool{nextPoll: ms, noMatch: nm})
	}
	return nil
}

// ReloadPollIntervals re-reads Config.PollIntervalPath (main calls it on
// SIGHUP). On error the current intervals stay. Without a path it does
// nothing.
func (b *Broker) ReloadPollIntervals() error {
	if b.cfg.PollIntervalPath == "" {
		return nil
	}
	b.reloadMu.Lock()
	defer b.reloadMu.Unlock()
	pi, err := readPollIntervals(b.cfg.PollIntervalPath, b.cfg.PollInterval)
	if err != nil {
		return err
	}
	if err := b.setPollIntervals(pi); err != nil {
		return err
	}
	b.cfg.Logger.Info("poll intervals reloaded", "restricted", pi.restricted, "unrestricted", pi.unrestricted)
	return nil
}

// ReloadGeoIP re-reads the files of Config.GeoIP (main calls it on
// SIGHUP). On error the current table stays in use. Without a GeoIP
// database it does nothing.
func (b *Broker) ReloadGeoIP() error {
	if b.cfg.GeoIP == nil {
		return nil
	}
	if err := b.cfg.GeoIP.Reload(); err != nil {
		return fmt.Errorf("%w: %w", ErrGeoIP, err)
	}
	v4, v6 := b.cfg.GeoIP.Table().Len()
	b.cfg.Logger.Info("geoip reloaded", "ipv4_ranges", v4, "ipv6_ranges", v6)
	return nil
}

// PollIntervals returns the current NextPoll of the restricted (also used
// for unknown NAT) and unrestricted pools.
func (b *Broker) PollIntervals() (restricted, unrestricted time.Duration) {
	return time.Duration(b.pools[poolRestricted].Load().nextPoll) * time.Millisecond,
		time.Duration(b.pools[poolUnrestricted].Load().nextPoll) * time.Millisecond
}

// Config returns the broker's configuration with defaults filled in.
func (b *Broker) Config() Config {
	c := b.cfg
	c.RateLimitExempt = append([]netip.Prefix(nil), c.RateLimitExempt...)
	c.TrustedProxies = append([]netip.Prefix(nil), c.TrustedProxies...)
	return c
}

// Stats returns how many proxies are waiting and matched.
func (b *Broker) Stats() Stats {
	s := b.match.Stats()
	return Stats{WaitingRestricted: s.WaitingRestricted, WaitingUnrestricted: s.WaitingUnrestricted, Matched: s.Matched}
}

// Close answers every waiting proxy poll with "no match" at once and
// from then on answers new polls with "no match" and new clients with "no
// snowflake proxies currently available". Sessions already matched still
// complete. Polls parked off net/http (see Listener) are answered with
// "Connection: close" and their connections closed, as are the idle
// connections the broker holds; Close returns once they are (each write
// is bounded by a short deadline). Call it before http.Server.Shutdown,
// which then waits for the remaining client requests (at most
// ClientTimeout); Run and Serve call it when their context ends. Close is
// idempotent and returns nil.
func (b *Broker) Close() error {
	b.shutOnce.Do(func() {
		b.cfg.Logger.Info("broker shutting down")
		// Parked polls learn of the shutdown before the matcher wakes
		// them, so that each answer closes its connection.
		b.parks.close()
		b.match.Close()
		if b.cluster != nil {
			b.cluster.Close()
		}
		b.parks.wait()
	})
	return nil
}
