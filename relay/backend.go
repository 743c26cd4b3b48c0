package relay

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
)

// Backend is one target that streams may be forwarded to: a plain TCP
// service (tor's ORPort or anything else) or a tor ExtORPort with its own
// authentication cookie. A relay with several backends balances each new
// stream over them (see Config.Backends).
type Backend struct {
	// Name labels the backend in metrics and logs. Default: Addr.
	Name string
	// Addr is the backend's TCP address, host:port.
	Addr string
	// ExtORCookie, if not empty, is the path of the tor instance's
	// ExtORPort authentication cookie (its DataDirectory's
	// extended_orport_auth_cookie): Addr is then an ExtORPort, and each
	// stream authenticates and sends USERADDR and TRANSPORT. The file is
	// read at each connection, so a tor restart's new cookie is picked up.
	ExtORCookie string
}

// Backend pool defaults.
const (
	// DefaultBackendCheckInterval is how often a healthy backend is probed.
	DefaultBackendCheckInterval = 10 * time.Second
	// backendMinBackoff and backendMaxBackoff bound the wait before a
	// failed backend is probed again; it doubles with each failure.
	backendMinBackoff = time.Second
	backendMaxBackoff = time.Minute
)

var backendNameRE = regexp.MustCompile(`^[A-Za-z0-9._:\[\]-]{1,64}$`)

// ParseBackend parses a -backend value:
//
//	tcp:HOST:PORT[,name=NAME]
//	extorport:HOST:PORT,cookie=FILE[,name=NAME]
//
// NAME is 1 to 64 letters, digits or ._:-[] and defaults to HOST:PORT.
func ParseBackend(s string) (Backend, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || (kind != "tcp" && kind != "extorport") {
		return Backend{}, fmt.Errorf("%w: backend %q: want tcp:HOST:PORT or extorport:HOST:PORT,cookie=FILE", ErrInvalidConfig, s)
	}
	parts := strings.Split(rest, ",")
	b := Backend{Addr: parts[0]}
	for _, p := range parts[1:] {
		k, v, _ := strings.Cut(p, "=")
		switch {
		case k == "name" && b.Name == "":
			b.Name = v
		case k == "cookie" && kind == "extorport" && b.ExtORCookie == "":
			b.ExtORCookie = v
		default:
			return Backend{}, fmt.Errorf("%w: backend %q: unexpected option %q", ErrInvalidConfig, s, k)
		}
	}
	if kind == "extorport" && b.ExtORCookie == "" {
		return Backend{}, fmt.Errorf("%w: backend %q: an extorport backend needs cookie=FILE", ErrInvalidConfig, s)
	}
	return b.withDefaults()
}

// withDefaults validates b and fills in its Name.
func (b Backend) withDefaults() (Backend, error) {
	if _, _, err := net.SplitHostPort(b.Addr); err != nil || b.Addr == "" {
		return b, fmt.Errorf("%w: backend address %q is not host:port", ErrInvalidConfig, b.Addr)
	}
	if b.Name == "" {
		b.Name = b.Addr
	}
	if !backendNameRE.MatchString(b.Name) {
		return b, fmt.Errorf("%w: backend name %q: use 1 to 64 letters, digits or ._:-[]", ErrInvalidConfig, b.Name)
	}
	return b, nil
}

// String returns b in ParseBackend's format.
func (b Backend) String() string {
	if b.ExtORCookie != "" {
		return fmt.Sprintf("extorport:%s,cookie=%s,name=%s", b.Addr, b.ExtORCookie, b.Name)
	}
	return fmt.Sprintf("tcp:%s,name=%s", b.Addr, b.Name)
}

// BackendStats is one backend's state and counters.
type BackendStats struct {
	Name string
	// Up is false while the backend is out of rotation after a failure.
	Up bool
	// ActiveStreams are the streams forwarded to it now; Streams all
	// streams it took; Failures the failed connections (streams and
	// health checks).
	ActiveStreams int64
	Streams       uint64
	Failures      uint64
}

// backend is one Backend's live state.
type backend struct {
	cfg      Backend
	info     *pt.ServerInfo // for an ExtORPort; nil for plain TCP
	active   atomic.Int64
	streams  atomic.Uint64
	failures atomic.Uint64
	dialTime prometheus.Histogram
	kick     chan struct{} // wakes the health checker after a failure

	mu      sync.Mutex
	up      bool      // guarded by mu
	streak  int       // guarded by mu; consecutive failures
	retryAt time.Time // guarded by mu; when a down backend is probed next
}

// backendPool balances streams over backends: each new stream goes to the
// healthy backend with the fewest open streams; a backend whose connection
// fails is taken out and probed again with exponential back-off (1 s to
// 1 min), and a healthy one is probed every check interval. Streams are
// balanced one by one, so the streams of one session may use different
// backends.
type backendPool struct {
	backends  []*backend
	transport string
	interval  time.Duration
	log       *slog.Logger
	rotor     atomic.Uint32 // where the search for a least-loaded backend starts
}

func newBackendPool(cfg Config) *backendPool {
	p := &backendPool{transport: cfg.Transport, interval: cfg.BackendCheckInterval, log: cfg.Logger}
	for _, bc := range cfg.Backends {
		b := &backend{
			cfg: bc,
			up:  true,
			dialTime: prometheus.NewHistogram(prometheus.HistogramOpts{
				Namespace: "flurry_relay", Name: "backend_dial_seconds",
				Help:        "Time to connect a stream to a backend (with the ExtORPort handshake), successful connections only.",
				ConstLabels: prometheus.Labels{"backend": bc.Name},
				Buckets:     []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
			}),
			kick: make(chan struct{}, 1),
		}
		if bc.ExtORCookie != "" {
			addr, err := net.ResolveTCPAddr("tcp", bc.Addr)
			if err == nil {
				b.info = &pt.ServerInfo{ExtendedOrAddr: addr, AuthCookiePath: bc.ExtORCookie}
			} else {
				// Resolved again at each dial: a name may resolve later.
				b.info = &pt.ServerInfo{AuthCookiePath: bc.ExtORCookie}
			}
		}
		p.backends = append(p.backends, b)
	}
	return p
}

// start runs one health checker per backend until closing is closed.
func (p *backendPool) start(wg *sync.WaitGroup, closing <-chan struct{}, timeout time.Duration) {
	for _, b := range p.backends {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.check(b, closing, timeout)
		}()
	}
}

// check probes b: every interval while it is up, at its retry time while
// it is down.
func (p *backendPool) check(b *backend, closing <-chan struct{}, timeout time.Duration) {
	timer := time.NewTimer(p.interval)
	defer timer.Stop()
	for {
		b.mu.Lock()
		wait := p.interval
		if !b.up {
			wait = time.Until(b.retryAt)
		}
		b.mu.Unlock()
		timer.Reset(wait)
		select {
		case <-closing:
			return
		case <-b.kick:
			continue
		case <-timer.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		conn, err := p.connect(ctx, b, netip.Addr{}, "")
		cancel()
		if err != nil {
			p.failed(b, err)
			continue
		}
		conn.Close()
		p.succeeded(b)
	}
}

// connect opens a connection to b. For an ExtORPort it authenticates and
// sends USERADDR (when client is known) and TRANSPORT (when transport is
// not empty).
func (p *backendPool) connect(ctx context.Context, b *backend, client netip.Addr, transport string) (net.Conn, error) {
	var d net.Dialer
	if deadline, ok := ctx.Deadline(); ok {
		d.Deadline = deadline
	}
	if b.info == nil {
		return d.DialContext(ctx, "tcp", b.cfg.Addr)
	}
	info := *b.info
	if info.ExtendedOrAddr == nil {
		addr, err := net.ResolveTCPAddr("tcp", b.cfg.Addr)
		if err != nil {
			return nil, err
		}
		info.ExtendedOrAddr = addr
	}
	var userAddr string
	if client.IsValid() {
		userAddr = netip.AddrPortFrom(client, 1).String() // as TorDialer
	}
	return pt.DialOrWithDialer(&d, &info, userAddr, transport)
}

func (p *backendPool) failed(b *backend, err error) {
	b.failures.Add(1)
	b.mu.Lock()
	wasUp := b.up
	b.up = false
	b.streak++
	backoff := backendMinBackoff << min(b.streak-1, 10)
	backoff = min(backoff, backendMaxBackoff)
	b.retryAt = time.Now().Add(backoff)
	b.mu.Unlock()
	if wasUp {
		p.log.Warn("backend down", "backend", b.cfg.Name, "err", err, "retry_in", backoff)
	}
	select {
	case b.kick <- struct{}{}:
	default:
	}
}

func (p *backendPool) succeeded(b *backend) {
	b.mu.Lock()
	wasUp := b.up
	b.up, b.streak = true, 0
	b.mu.Unlock()
	if !wasUp {
		p.log.Info("backend up", "backend", b.cfg.Name)
	}
}

// pick returns the backend for the next stream, skipping those in tried:
// the healthy one with the fewest open streams (ties broken round-robin),
// else, when every untried backend is down, the one due to be retried
// first. nil when all have been tried.
func (p *backendPool) pick(tried []*backend) *backend {
	var best, bestDown *backend
	var bestDownAt time.Time
	n := len(p.backends)
	start := int(p.rotor.Add(1)) % n
	for i := range n {
		b := p.backends[(start+i)%n]
		if contains(tried, b) {
			continue
		}
		b.mu.Lock()
		up, at := b.up, b.retryAt
		b.mu.Unlock()
		switch {
		case up:
			if best == nil || b.active.Load() < best.active.Load() {
				best = b
			}
		case bestDown == nil || at.Before(bestDownAt):
			bestDown, bestDownAt = b, at
		}
	}
	if best != nil {
		return best
	}
	return bestDown
}

func contains(bs []*backend, b *backend) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// dial is the pool's DialFunc: it tries backends in pick order until one
// connects, giving each attempt an equal share of what is left of ctx's
// deadline.
func (p *backendPool) dial(ctx context.Context, client netip.Addr) (net.Conn, error) {
	var tried []*backend
	var lastErr error
	for {
		b := p.pick(tried)
		if b == nil {
			return nil, fmt.Errorf("every backend failed, last: %w", lastErr)
		}
		tried = append(tried, b)
		actx, cancel := ctx, context.CancelFunc(func() {})
		if deadline, ok := ctx.Deadline(); ok {
			left := len(p.backends) - len(tried) + 1
			actx, cancel = context.WithTimeout(ctx, time.Until(deadline)/time.Duration(left))
		}
		b.active.Add(1)
		t0 := time.Now()
		conn, err := p.connect(actx, b, client, p.transport)
		cancel()
		if err == nil {
			b.dialTime.Observe(time.Since(t0).Seconds())
			b.streams.Add(1)
			p.succeeded(b)
			return &backendConn{Conn: conn, b: b}, nil
		}
		b.active.Add(-1)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		p.failed(b, err)
		lastErr = fmt.Errorf("backend %s: %w", b.cfg.Name, err)
	}
}

func (p *backendPool) stats() []BackendStats {
	out := make([]BackendStats, len(p.backends))
	for i, b := range p.backends {
		b.mu.Lock()
		up := b.up
		b.mu.Unlock()
		out[i] = BackendStats{
			Name: b.cfg.Name, Up: up, ActiveStreams: b.active.Load(),
			Streams: b.streams.Load(), Failures: b.failures.Load(),
		}
	}
	return out
}

// collectors returns the pool's metrics, labelled by backend name.
func (p *backendPool) collectors() []prometheus.Collector {
	const ns = "flurry_relay"
	var cs []prometheus.Collector
	for _, b := range p.backends {
		l := prometheus.Labels{"backend": b.cfg.Name}
		cs = append(cs,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "backend_up", ConstLabels: l,
				Help: "1 while the backend is in rotation, 0 while it is out after a failure."},
				func() float64 {
					b.mu.Lock()
					defer b.mu.Unlock()
					if b.up {
						return 1
					}
					return 0
				}),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: "backend_streams", ConstLabels: l,
				Help: "Streams forwarded to the backend now."},
				func() float64 { return float64(b.active.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "backend_streams_total", ConstLabels: l,
				Help: "Streams forwarded to the backend."},
				func() float64 { return float64(b.streams.Load()) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: "backend_failures_total", ConstLabels: l,
				Help: "Failed connections to the backend (streams and health checks)."},
				func() float64 { return float64(b.failures.Load()) }),
			b.dialTime,
		)
	}
	return cs
}

// backendConn is a connection to a backend; closing it ends the stream's
// count on the backend.
type backendConn struct {
	net.Conn
	b    *backend
	once sync.Once
}

func (c *backendConn) Close() error {
	c.once.Do(func() { c.b.active.Add(-1) })
	return c.Conn.Close()
}

// SyscallConn lets copyToStream wait for readability without a buffer.
func (c *backendConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("backend connection %T is not a socket", c.Conn)
	}
	return sc.SyscallConn()
}

// CloseWrite passes a half-close on; without one it closes.
func (c *backendConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return c.Close()
}
