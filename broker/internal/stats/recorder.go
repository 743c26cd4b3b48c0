package stats

import (
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/flurrypt/flurry/common/geoip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Defaults for Config fields left zero.
const (
	// DefaultInterval is the descriptor period: Snowflake's 24 hours.
	DefaultInterval = 24 * time.Hour
	// DefaultMaxProxyIPs bounds the per-period set of proxy address hashes
	// (about 36 bytes each: 36 MiB when full).
	DefaultMaxProxyIPs = 1 << 20
)

// Config configures a Recorder. The zero value works: a fresh registry with
// the Go and process collectors, no geoip (every country "??"), descriptors
// logged instead of written to a file, a 24-hour period.
type Config struct {
	// Registry receives the Recorder's metrics. Nil means a new registry
	// that also holds the Go runtime and process collectors. A registry
	// passed in gets only the Recorder's own metrics.
	Registry *prometheus.Registry
	// GeoIP maps addresses to countries. Nil means every address is "??";
	// unlike Snowflake (docs/design.md, weakness 17), proxy address
	// statistics are still collected.
	GeoIP *geoip.DB
	// MetricsLogPath is the file Run appends each period's descriptor to,
	// and the file the /metrics handler serves. Empty means descriptors are
	// written to Logger (level Info) and /metrics answers 404, as in
	// Snowflake.
	MetricsLogPath string
	// Interval is the descriptor period. Zero means DefaultInterval; it must
	// otherwise be at least one second.
	Interval time.Duration
	// MaxProxyIPs bounds how many distinct proxy addresses one period
	// tracks; addresses beyond it are not counted as unique (and are counted
	// by flurry_broker_proxy_ips_untracked_total). Zero means
	// DefaultMaxProxyIPs.
	MaxProxyIPs int
	// Now is the clock. Nil means time.Now.
	Now func() time.Time
	// Logger receives descriptor-write errors (and the descriptors when
	// MetricsLogPath is empty). Nil means discard.
	Logger *slog.Logger
}

// Recorder counts what the broker does, for Prometheus, Snowflake's daily
// metrics descriptor, the /debug summary and the status page. All methods
// are safe for concurrent use and never block on I/O; every string argument
// is mapped into a fixed set (see the package documentation).
type Recorder struct {
	registry    *prometheus.Registry
	geo         *geoip.DB
	logPath     string
	interval    time.Duration
	maxProxyIPs int
	now         func() time.Time
	log         *slog.Logger
	descs       descs

	mu sync.Mutex
	// Everything below is guarded by mu.
	period          period
	available       [numTypes][numNATs]int
	proxyPolls      [numTypes][numNATs][2]uint64 // [idle, matched]
	relayPolls      [numTypes][numNATs][2]uint64 // [absent, present]
	relayRejections [numTypes][numNATs]uint64
	answers         [numTypes][2]uint64 // [success, client gone]
	unanswered      [numTypes]uint64
	proxyIPs        map[proxyIPKey]uint64
	untrackedIPs    uint64
	clientPolls     map[clientKey]uint64
	rateLimited     [numEndpoints]uint64
	rejected        [numEndpoints][numReasons]uint64
	connsRefused    uint64
	acceptErrors    [numListeners][2]uint64 // [out of descriptors, other]
	durations       [numEndpoints]histogram
	minutes         ring
	hours           ring
}

type proxyIPKey struct {
	t  typeIdx
	n  natIdx
	cc string
}

type clientKey struct {
	n  natIdx
	s  statusIdx
	m  methodIdx
	cc string
}

// New returns a Recorder for cfg, registered in cfg.Registry (or a new
// registry). It checks that cfg.MetricsLogPath, if set, can be opened for
// appending (creating the file).
func New(cfg Config) (*Recorder, error) {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < time.Second {
		return nil, fmt.Errorf("%w: metrics interval %v", ErrInvalidConfig, cfg.Interval)
	}
	if cfg.MaxProxyIPs == 0 {
		cfg.MaxProxyIPs = DefaultMaxProxyIPs
	}
	if cfg.MaxProxyIPs < 0 {
		return nil, fmt.Errorf("%w: maximum number of tracked proxy addresses %d", ErrInvalidConfig, cfg.MaxProxyIPs)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.MetricsLogPath != "" {
		f, err := openMetricsLog(cfg.MetricsLogPath)
		if err != nil {
			return nil, err
		}
		if err := f.Close(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrMetricsLog, err)
		}
	}
	reg := cfg.Registry
	if reg == nil {
		reg = prometheus.NewRegistry()
		if err := reg.Register(collectors.NewGoCollector()); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRegister, err)
		}
		if err := reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrRegister, err)
		}
	}
	r := &Recorder{
		registry:    reg,
		geo:         cfg.GeoIP,
		logPath:     cfg.MetricsLogPath,
		interval:    cfg.Interval,
		maxProxyIPs: cfg.MaxProxyIPs,
		now:         cfg.Now,
		log:         cfg.Logger,
		descs:       newDescs(),
		period:      newPeriod(),
		proxyIPs:    make(map[proxyIPKey]uint64),
		clientPolls: make(map[clientKey]uint64),
		minutes:     newRing(time.Minute, 60),
		hours:       newRing(time.Hour, 24),
	}
	if err := reg.Register(r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRegister, err)
	}
	return r, nil
}

func openMetricsLog(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrMetricsLog, err)
	}
	return f, nil
}

// Registry returns the registry holding the Recorder's metrics.
func (r *Recorder) Registry() *prometheus.Registry { return r.registry }

// country returns the validated country code of addr.
func (r *Recorder) country(addr netip.Addr) string {
	return countryCode(r.geo.Lookup(addr))
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ProxyPoll records a well-formed proxy poll that entered a pool: its
// address counts towards the period's unique proxy addresses (by country,
// type and NAT), and the poll towards the polls with or without a relay
// pattern. Call ProxyPollResult when it ends.
func (r *Recorder) ProxyPoll(ip netip.Addr, proxyType, nat string, hasRelayPattern bool) {
	t, n := typeIndex(proxyType), natIndex(nat)
	cc := r.country(ip)
	var h uint64
	valid := ip.IsValid()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relayPolls[t][n][boolIndex(hasRelayPattern)]++
	r.period.countRelayPattern(hasRelayPattern)
	if !valid {
		return
	}
	h = r.period.hash(ip)
	switch r.period.addProxyIP(h, t, n, cc, r.maxProxyIPs) {
	case addedNew:
		r.proxyIPs[proxyIPKey{t, n, cc}]++
	case addedUntracked:
		r.untrackedIPs++
	}
}

// ProxyPollResult records how a poll recorded by ProxyPoll ended: matched
// with a client ("client match") or not ("no match", Snowflake's idle).
// Polls that end otherwise (the proxy went away) need no call.
func (r *Recorder) ProxyPollResult(proxyType, nat string, matched bool) {
	t, n := typeIndex(proxyType), natIndex(nat)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.proxyPolls[t][n][boolIndex(matched)]++
	if !matched {
		r.period.idle++
	}
}

// ProxyRejectedRelayPattern records a well-formed poll refused because its
// AcceptedRelayPattern was absent or did not cover the broker's bridges
// ("incorrect relay pattern"). It also counts the poll as one with or
// without a relay pattern, as Snowflake does.
func (r *Recorder) ProxyRejectedRelayPattern(proxyType, nat string, hasRelayPattern bool) {
	t, n := typeIndex(proxyType), natIndex(nat)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relayPolls[t][n][boolIndex(hasRelayPattern)]++
	r.relayRejections[t][n]++
	r.period.countRelayPattern(hasRelayPattern)
	r.period.rejectedRelay++
}

// ProxyAnswer records a proxy's answer: delivered to the waiting client
// (ok) or arriving after the client was gone. proxyType is "" (counted as
// unknown) when the broker no longer knows the proxy.
func (r *Recorder) ProxyAnswer(proxyType string, ok bool) {
	t := typeIndex(proxyType)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[t][1-boolIndex(ok)]++
}

// ProxyUnanswered records a client offer that a proxy took and did not
// answer before the client's time ran out.
func (r *Recorder) ProxyUnanswered(proxyType string) {
	t := typeIndex(proxyType)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unanswered[t]++
}

// ClientPoll records the end of a client's rendezvous: status is
// StatusMatched, StatusDenied or StatusTimeout, method MethodHTTP,
// MethodAMPCache or MethodSQS. ip is the client's address (or the one
// derived from its offer); an invalid ip counts as country "??".
func (r *Recorder) ClientPoll(ip netip.Addr, nat, method, status string) {
	n, m, s := natIndex(nat), methodIndex(method), statusIndex(status)
	cc := r.country(ip)
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.clientPolls[clientKey{n, s, m, cc}]++
	r.period.countClient(n, m, s, cc)
	if s != statusOther {
		r.minutes.add(now, s)
		r.hours.add(now, s)
	}
}

// AvailableProxies adds delta (+1 when a poll starts waiting, -1 when it
// stops) to the number of proxies currently available.
func (r *Recorder) AvailableProxies(proxyType, nat string, delta int) {
	t, n := typeIndex(proxyType), natIndex(nat)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.available[t][n] += delta
}

// RateLimited records a request to endpoint refused by the rate limiter.
func (r *Recorder) RateLimited(endpoint string) {
	e := endpointIndex(endpoint)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rateLimited[e]++
}

// The listeners of AcceptFailed: the rendezvous listener, and the metrics
// listener (Config.MetricsAddr).
const (
	ListenerRendezvous = "rendezvous"
	ListenerMetrics    = "metrics"
)

const numListeners = 2

var listenerNames = [numListeners]string{ListenerRendezvous, ListenerMetrics}

// ConnRefused records a connection closed at accept because its address
// held the most connections allowed.
func (r *Recorder) ConnRefused() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.connsRefused++
}

// AcceptFailed records a failed accept on listener (ListenerRendezvous or
// ListenerMetrics; another name counts as the rendezvous listener);
// noFiles tells that the process or system was out of file descriptors
// (EMFILE, ENFILE).
func (r *Recorder) AcceptFailed(listener string, noFiles bool) {
	l := 0
	if listener == ListenerMetrics {
		l = 1
	}
	kind := 1
	if noFiles {
		kind = 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acceptErrors[l][kind]++
}

// RequestRejected records a request to endpoint refused before it could be
// understood, for reason (ReasonMethod, ReasonTooLarge, ReasonMalformed,
// ReasonUnknownBridge, ReasonDuplicateSid; ReasonRateLimited is passed on
// to RateLimited).
func (r *Recorder) RequestRejected(endpoint, reason string) {
	if reason == ReasonRateLimited {
		r.RateLimited(endpoint)
		return
	}
	e, why := endpointIndex(endpoint), reasonIndex(reason)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rejected[e][why]++
}

// ObserveRequest records that a request to endpoint took d.
func (r *Recorder) ObserveRequest(endpoint string, d time.Duration) {
	e := endpointIndex(endpoint)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.durations[e].observe(d.Seconds())
}

// Available returns the number of proxies currently available, as counted
// by AvailableProxies.
func (r *Recorder) Available() Available {
	r.mu.Lock()
	defer r.mu.Unlock()
	return Available{n: r.available}
}

// Snapshot returns what the status page shows: proxies available now and
// client outcomes per minute over the last hour and per hour over the last
// day (counts rounded up to multiples of 8).
func (r *Recorder) Snapshot() Snapshot {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Snapshot{Now: now, Available: Available{n: r.available}}
	s.LastHour, s.HourTotal = r.minutes.buckets(now)
	s.LastDay, s.DayTotal = r.hours.buckets(now)
	return s
}
