package relay

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/httprun"
	"github.com/flurrypt/flurry/relay/internal/idlepoll"
	"github.com/flurrypt/flurry/relay/internal/wsserver"
)

// Relay is the bridge end of Flurry (Snowflake's "server"). Create it with
// New, serve WebSockets with Serve or Run (or mount Handler in your own
// server), and stop it with Close.
type Relay struct {
	cfg      *settings
	log      *slog.Logger
	seed     maphash.Seed // per-process key for assigning ClientIDs to shards
	epoch    time.Time    // origin of the carriers' clocks
	shards   []*shard
	stats    counters
	pools    *bufferPools
	ws       *wsserver.Pools            // the carriers' WebSocket read and write buffers
	poller   *idlepoll.Poller[*carrier] // idle carriers waiting to be readable; nil where unsupported
	registry *prometheus.Registry
	backends *backendPool      // nil without Config.Backends
	adm      *admission        // per-peer budgets of the handler (forwarded addresses from trusted proxies)
	conns    *admission        // per-peer connection counts of Serve's listener (TCP peers)
	seal     *tunnelseal.Relay // checks sealed join headers; nil without Config.RelayKey

	closing   chan struct{} // closed by Close
	closeOnce sync.Once
	wg        sync.WaitGroup // every goroutine the relay starts

	mu       sync.Mutex
	clients  map[turbotunnel.ClientID]*clientState // guarded by mu
	carriers map[*carrier]struct{}                 // guarded by mu; open carriers
	sessions map[*session]struct{}                 // guarded by mu; live sessions
	pending  int                                   // guarded by mu; carriers counted against MaxConns
}

// clientState is what the relay knows about one ClientID while it has a
// carrier or a session.
type clientState struct {
	addr     netip.Addr // the client's IP as the latest carrier reported it
	carriers int        // open carriers with this ClientID
	session  *session   // the ClientID's live KCP session, if any
	// admitted is set when a packet of this ClientID was allowed to start
	// a session, and cleared when the session ends: until then, the
	// carriers' packets go through admitSession.
	admitted atomic.Bool
	join     joinState // sealed or not, and the joins seen (seal.go)
	// resend records which carrier took each segment of the session's,
	// to hold back resends of what is only waiting (resend.go).
	resend resendFilter
	// deliveries keeps a standby proxy's carrier idle (standby.go).
	deliveries deliveries
}

// New returns a Relay configured by cfg (see Config for defaults). It
// starts the turbotunnel state machines; Close stops them.
func New(cfg Config) (*Relay, error) {
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	cfg = s.Config // defaults filled in
	r := &Relay{
		cfg:      s,
		log:      cfg.Logger,
		seed:     maphash.MakeSeed(),
		epoch:    time.Now(),
		pools:    newBufferPools(),
		closing:  make(chan struct{}),
		clients:  make(map[turbotunnel.ClientID]*clientState),
		carriers: make(map[*carrier]struct{}),
		sessions: make(map[*session]struct{}),
		adm:      newAdmission(cfg),
		conns:    newAdmission(Config{MaxCarriersPerAddr: cfg.MaxCarriersPerAddr}),
	}
	r.ws = wsserver.NewPools()
	if cfg.RelayKey != nil {
		if r.seal, err = tunnelseal.NewRelay(*cfg.RelayKey); err != nil {
			return nil, fmt.Errorf("%w: RelayKey: %w", ErrInvalidConfig, err)
		}
	}
	if p, err := idlepoll.New(func(c *carrier) {
		r.stats.connsParked.Add(-1)
		go c.resume()
	}); err == nil {
		r.poller = p
	} else {
		r.log.Debug("idle carriers keep a goroutine each", "err", err)
	}
	for i := range cfg.NumTurbotunnel {
		s, err := newShard(r, i)
		if err != nil {
			r.Close()
			return nil, err
		}
		r.shards = append(r.shards, s)
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.adjustSendWindows()
	}()
	r.registry = newRegistry(&r.stats, func() float64 { return float64(r.queueDrops()) })
	if len(cfg.Backends) > 0 {
		r.backends = newBackendPool(cfg)
		r.cfg.Dial = r.backends.dial
		r.registry.MustRegister(r.backends.collectors()...)
		r.backends.start(&r.wg, r.closing, cfg.DialTimeout)
	}
	return r, nil
}

// shardFor returns the KCP state machine that serves id: a keyed hash of the
// ClientID, so that clients cannot choose (or crowd) a state machine.
func (r *Relay) shardFor(id turbotunnel.ClientID) *shard {
	h := maphash.Bytes(r.seed, id[:])
	return r.shards[h%uint64(len(r.shards))]
}

// Handler returns the http.Handler that accepts WebSocket carriers. Serve
// and Run use it; use it directly to mount the relay in another server
// (which then needs timeouts of its own).
func (r *Relay) Handler() http.Handler { return http.HandlerFunc(r.serveHTTP) }

// MetricsHandler returns an http.Handler serving the relay's Prometheus
// metrics from its own registry.
func (r *Relay) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(r.registry, promhttp.HandlerOpts{})
}

func (r *Relay) serveHTTP(w http.ResponseWriter, req *http.Request) {
	if c := r.upgrade(w, req); c != nil {
		// Serve the carrier in a goroutine of its own and return, so that
		// an HTTP server's request buffers become garbage at once.
		go c.serve()
	}
}

// upgrade answers req, and returns the carrier it opened (to be served by
// the caller) if it was a WebSocket upgrade that was admitted, or nil.
func (r *Relay) upgrade(w http.ResponseWriter, req *http.Request) *carrier {
	if r.cfg.Path != "" && req.URL.Path != r.cfg.Path {
		r.stats.rejectedPath.Add(1)
		http.NotFound(w, req)
		return nil
	}
	peer, counted, ok := r.admitPeer(w, req)
	if !ok {
		return nil
	}
	if !r.reserveConn() {
		r.releaseAdmitted(peer, counted)
		r.stats.rejectedLimit.Add(1)
		http.Error(w, "too many connections", http.StatusServiceUnavailable)
		return nil
	}
	// Proxies run in browsers on any origin, and the relay has no cookies
	// or ambient authority to protect: Origin is not checked.
	ws, err := wsserver.Upgrade(w, req, r.ws, r.cfg.HandshakeTimeout)
	if err != nil {
		// Upgrade has already answered (400, 405...).
		r.releaseConn()
		r.releaseAdmitted(peer, counted)
		r.stats.fail(failUpgrade)
		r.log.Debug("websocket upgrade failed", "err", err)
		return nil
	}
	c := newCarrier(r, ws, parseClientIP(req.URL.Query().Get("client_ip")))
	c.peer, c.peerCounted = peer, counted
	if !r.addCarrier(c) {
		c.conn.Close()
		r.releaseConn()
		r.releaseAdmitted(peer, counted)
		return nil
	}
	c.ended = func() {
		r.removeCarrier(c)
		r.releasePeer(c.peer, c.peerCounted)
		r.releaseConn()
		r.wg.Done()
	}
	return c
}

// releaseAdmitted gives back what admitPeer counted.
func (r *Relay) releaseAdmitted(peer netip.Addr, counted bool) {
	if counted {
		r.adm.removeCarrier(peer)
	}
}

// releasePeer gives back a carrier's count: admitPeer's, or else the one
// Serve took at accept under the same key (countAtAccept).
func (r *Relay) releasePeer(peer netip.Addr, admitted bool) {
	if admitted {
		r.adm.removeCarrier(peer)
	} else {
		r.conns.removeCarrier(peer)
	}
}

// reserveConn counts a new connection against MaxConns.
func (r *Relay) reserveConn() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.MaxConns > 0 && r.pending >= r.cfg.MaxConns {
		return false
	}
	r.pending++
	return true
}

func (r *Relay) releaseConn() {
	r.mu.Lock()
	r.pending--
	r.mu.Unlock()
}

// addCarrier registers c for shutdown and adds it to the relay's wait
// group; it fails once Close has begun.
func (r *Relay) addCarrier(c *carrier) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.closing:
		return false
	default:
	}
	r.carriers[c] = struct{}{}
	r.wg.Add(1)
	return true
}

func (r *Relay) removeCarrier(c *carrier) {
	r.mu.Lock()
	delete(r.carriers, c)
	r.mu.Unlock()
}

// attachClient records that carrier c for id (from client address addr)
// has completed its handshake, and returns id's state (valid until
// detachClient) and whether id already has a live session. It returns a
// nil state if id's session may not take c (see mayJoin).
func (r *Relay) attachClient(c *carrier, id turbotunnel.ClientID, addr netip.Addr) (st *clientState, hasSession bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st = r.clients[id]
	fresh := st == nil
	if fresh {
		st = &clientState{}
	}
	if !r.mayJoin(st, c) {
		return nil, false
	}
	if fresh {
		r.clients[id] = st
	}
	st.carriers++
	c.resendNum = st.resend.addCarrier()
	if addr.IsValid() {
		st.addr = addr
	}
	if st.carriers == 1 && st.session != nil {
		r.resume(st.session)
	}
	return st, st.session != nil
}

func (r *Relay) detachClient(id turbotunnel.ClientID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.clients[id]; st != nil {
		st.carriers--
		switch {
		case st.carriers > 0:
			if st.session != nil {
				r.resend(st.session)
			}
		case st.session != nil:
			r.startAbsence(st.session)
		default:
			delete(r.clients, id)
		}
	}
}

// startSession records a new session for id and returns the client's
// address (the zero Addr if unknown: the session still works, tor only
// misses USERADDR).
func (r *Relay) startSession(s *session) (netip.Addr, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.closing:
		return netip.Addr{}, false
	default:
	}
	r.sessions[s] = struct{}{}
	st := r.clients[s.id]
	if st == nil {
		// No carrier any more (it closed right after its packet); the
		// session may still get one.
		st = &clientState{}
		r.clients[s.id] = st
	}
	st.session = s
	s.resend = &st.resend
	r.shardFor(s.id).filters.add(s.id, s.resend)
	st.admitted.Store(true)
	if st.carriers <= 0 {
		r.startAbsence(s)
	}
	return st.addr, true
}

func (r *Relay) endSession(s *session) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sessions, s)
	r.endAbsence(s)
	st := r.clients[s.id]
	if st != nil && st.session == s {
		r.shardFor(s.id).filters.remove(s.id)
		st.session = nil
		// A new session needs a new admission.
		st.admitted.Store(false)
		if st.carriers <= 0 {
			delete(r.clients, s.id)
		}
	}
	if st == nil || st.carriers <= 0 {
		// Nothing will take what the ended session left queued for the
		// client: free it now rather than after ClientTimeout.
		r.shardFor(s.id).pconn.Forget(s.id.Addr())
	}
}

// Run listens on Config.ListenAddr and serves as RunOn does.
func (r *Relay) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", r.cfg.ListenAddr)
	if err != nil {
		r.Close()
		return fmt.Errorf("listen: %w", err)
	}
	return r.RunOn(ctx, ln)
}

// RunOn serves carriers on every listener (Serve) and, with
// Config.MetricsAddr, Prometheus metrics at /metrics there, until ctx ends,
// the relay is closed or a listener fails; then it closes the relay. It
// returns the first failure, or nil. Tor's managed mode gives the relay
// the listeners tor asked for.
func (r *Relay) RunOn(ctx context.Context, lns ...net.Listener) error {
	defer r.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var metrics sync.WaitGroup
	if r.cfg.MetricsAddr != "" {
		var lc net.ListenConfig
		mln, err := lc.Listen(ctx, "tcp", r.cfg.MetricsAddr)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			return fmt.Errorf("listen for metrics: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", r.MetricsHandler())
		metrics.Go(func() {
			if err := httprun.Serve(ctx, httprun.MetricsServer(mux, r.log), mln, httprun.MetricsShutdownTimeout); err != nil {
				r.log.Warn("metrics server stopped", "err", err)
			}
		})
	}
	errs := make(chan error, len(lns))
	var carriers sync.WaitGroup
	for _, ln := range lns {
		r.log.Info("relay listening", "addr", ln.Addr().String(), "tls", r.cfg.TLSConfig != nil)
		carriers.Go(func() {
			if err := r.Serve(ctx, ln); err != nil && !errors.Is(err, ErrClosed) {
				errs <- err
				cancel()
			}
		})
	}
	carriers.Wait()
	cancel()
	metrics.Wait()
	close(errs)
	return <-errs
}

// Close closes every carrier, session and stream and the turbotunnel state
// machines, and waits for the relay's goroutines. It is idempotent.
func (r *Relay) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		close(r.closing)
		carriers := make([]*carrier, 0, len(r.carriers))
		for c := range r.carriers {
			carriers = append(carriers, c)
		}
		sessions := make([]*session, 0, len(r.sessions))
		for s := range r.sessions {
			sessions = append(sessions, s)
		}
		r.mu.Unlock()
		for _, c := range carriers {
			c.conn.Close()
		}
		if r.poller != nil {
			// Parked carriers notice that they are closed.
			r.poller.Close()
		}
		for _, s := range sessions {
			s.close()
		}
		for _, s := range r.shards {
			s.close()
		}
		r.wg.Wait()
	})
	return nil
}

// Stats returns a snapshot of the relay's counters.
func (r *Relay) Stats() Stats {
	c := &r.stats
	s := Stats{
		Connections:       int64(c.connsTotal.Load()),
		ActiveConnections: c.connsActive.Load(),
		ParkedConnections: c.connsParked.Load(),
		Sessions:          int64(c.sessionsTotal.Load()),
		ActiveSessions:    c.sessionsActive.Load(),
		Streams:           int64(c.streamsTotal.Load()),
		ActiveStreams:     c.streamsActive.Load(),
		DialFailures:      c.dialFailures.Load(),
		CarrierBytesIn:    c.carrierIn.Load(),
		CarrierBytesOut:   c.carrierOut.Load(),
		StreamBytesUp:     c.streamUp.Load(),
		StreamBytesDown:   c.streamDown.Load(),
		HandshakeFailures: make(map[string]uint64, len(failReasons)),
		RejectedPath:      c.rejectedPath.Load(),
		RejectedLimit:     c.rejectedLimit.Load(),
		RejectedAddr:      c.rejectedAddr.Load(),
		SessionsRefused:   make(map[string]uint64, len(refuseReasons)),
		SessionsReclaimed: c.sessionsReclaimed.Load(),
		SessionsAbandoned: c.sessionsAbandoned.Load(),
		SessionsResent:    c.sessionsResent.Load(),
		SilentSessions:    c.sessionsSilent.Load(),
		SilentDrops:       c.silentDrops.Load(),
		QueueDrops:        r.queueDrops(),
		ResendsHeld:       c.resendsHeld.Load(),
		ResendsSent:       c.resendsSent.Load(),
		SegmentsSent:      c.segmentsSent.Load(),
		SealFailures:      c.sealFailures.Load(),
	}
	for i, reason := range failReasons {
		s.HandshakeFailures[reason] = c.handshakeFail[i].Load()
	}
	if r.backends != nil {
		s.Backends = r.backends.stats()
	}
	for i, reason := range refuseReasons {
		s.SessionsRefused[reason] = c.refused[i].Load()
	}
	return s
}
