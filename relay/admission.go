package relay

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"
	"time"

	"golang.org/x/time/rate"

	"github.com/flurrypt/flurry/internal/clientaddr"
)

// This file is the relay's admission control: what one peer address may
// hold (concurrent carriers, new sessions per second), the global session
// cap, and the reclamation of sessions that carry nothing. A peer is the
// proxy connecting to the relay: its TCP address, or the address a trusted
// reverse proxy forwards (Config.TrustedProxies). Nothing a peer sends
// decides its own key.

// errSessionRefused ends a carrier whose first packet may not start a
// session.
var errSessionRefused = errors.New("session refused")

// peerKey is the key of addr's budget: the address itself for IPv4, its
// /64 for IPv6 (one host usually owns a whole /64).
func peerKey(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.Addr()
	}
	return addr
}

// peerBudget is what one peer key holds.
type peerBudget struct {
	carriers int           // open connections (handler: upgraded or upgrading carriers)
	sessions *rate.Limiter // new sessions
}

// admission tracks the budgets of peer keys. It has its own lock: the
// relay's lock guards sessions and ClientIDs.
type admission struct {
	maxCarriers int        // per key; <= 0: no limit
	sessionRate rate.Limit // per key; 0: no limit
	burst       int
	resolver    *clientaddr.Resolver
	warned      sync.Once // forwarding headers from an untrusted peer

	mu        sync.Mutex
	peers     map[netip.Addr]*peerBudget // guarded by mu
	lastSweep time.Time                  // guarded by mu
}

// sweepInterval is how often budgets that are back to full and unused are
// forgotten (an address that returns gets a full one anyway).
const sweepInterval = 10 * time.Second

func newAdmission(cfg Config) *admission {
	a := &admission{
		maxCarriers: cfg.MaxCarriersPerAddr,
		burst:       cfg.NewSessionBurst,
		resolver:    clientaddr.New(cfg.TrustedProxies),
		peers:       make(map[netip.Addr]*peerBudget),
	}
	if cfg.NewSessionRate > 0 {
		a.sessionRate = rate.Limit(cfg.NewSessionRate)
	}
	return a
}

// peerOf returns the key of the peer behind req, and whether req carried
// forwarding headers that were ignored because its peer is not trusted.
func (a *admission) peerOf(req *http.Request) (netip.Addr, bool) {
	return peerKey(a.resolver.Addr(req)), a.resolver.IgnoredForwarding(req)
}

// budget returns key's budget, creating it; a.mu must be held.
func (a *admission) budget(key netip.Addr, now time.Time) *peerBudget {
	if now.Sub(a.lastSweep) > sweepInterval {
		a.sweep(now)
	}
	b := a.peers[key]
	if b == nil {
		b = &peerBudget{}
		if a.sessionRate > 0 {
			b.sessions = rate.NewLimiter(a.sessionRate, a.burst)
		}
		a.peers[key] = b
	}
	return b
}

// sweep forgets unused budgets; a.mu must be held.
func (a *admission) sweep(now time.Time) {
	a.lastSweep = now
	for k, b := range a.peers {
		if b.idle(now, a.burst) {
			delete(a.peers, k)
		}
	}
}

func (b *peerBudget) idle(now time.Time, burst int) bool {
	return b.carriers <= 0 && (b.sessions == nil || b.sessions.TokensAt(now) >= float64(burst))
}

// addCarrier counts a new connection from key, or reports false if key
// holds its maximum already.
func (a *admission) addCarrier(key netip.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.budget(key, time.Now())
	if a.maxCarriers > 0 && b.carriers >= a.maxCarriers {
		return false
	}
	b.carriers++
	return true
}

func (a *admission) removeCarrier(key netip.Addr) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.peers[key]
	if b == nil {
		return
	}
	b.carriers--
	if b.idle(time.Now(), a.burst) {
		delete(a.peers, key)
	}
}

// allowSession takes one new session from key's budget.
func (a *admission) allowSession(key netip.Addr) bool {
	if a.sessionRate == 0 {
		return true
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	return a.budget(key, now).sessions.AllowN(now, 1)
}

// admitSession decides whether p, the first packet a carrier delivers for a
// ClientID without a session, may start one. It counts refusals.
func (r *Relay) admitSession(c *carrier, p []byte) bool {
	switch {
	case !opensSession(p):
		r.stats.refuse(refuseMalformed)
	case !r.sessionRoom():
		r.stats.refuse(refuseGlobal)
	case !r.adm.allowSession(c.peer):
		r.stats.refuse(refuseAddr)
	default:
		c.client.admitted.Store(true)
		return true
	}
	return false
}

// sessionRoom reports whether the global session cap leaves room for one
// more session.
func (r *Relay) sessionRoom() bool {
	if r.cfg.MaxSessions <= 0 {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sessions) < r.cfg.MaxSessions
}

// streamlessLimit is how many SessionOpenTimeout periods a session that
// has opened no stream may live while it has a carrier. A Snowflake client
// opens its first stream in the packet that starts the session, so any
// wait is generous.
const streamlessLimit = 6

// armReclaim closes s if it has opened no stream SessionOpenTimeout from
// now and has no carrier, and in any case at streamlessLimit periods.
func (r *Relay) armReclaim(s *session) {
	d := r.cfg.SessionOpenTimeout
	periods := 0
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reclaim = time.AfterFunc(d, func() {
		if s.opened.Load() {
			return
		}
		periods++
		r.mu.Lock()
		st := r.clients[s.id]
		carried := st != nil && st.carriers > 0
		r.mu.Unlock()
		s.mu.Lock()
		if s.done {
			s.mu.Unlock()
			return
		}
		if carried && periods < streamlessLimit {
			s.reclaim.Reset(d)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		r.stats.sessionsReclaimed.Add(1)
		s.close()
	})
}

// limitListener refuses (closes) a connection from a TCP peer that already
// holds maxPerPeer connections, unless the peer is a trusted proxy, whose
// clients the handler tells apart by their forwarded addresses.
type limitListener struct {
	net.Listener
	r *Relay
}

func (l limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		ap, perr := netip.ParseAddrPort(c.RemoteAddr().String())
		if perr != nil || l.r.cfg.trusts(ap.Addr()) {
			return c, nil
		}
		key := peerKey(ap.Addr())
		if !l.r.conns.addCarrier(key) {
			l.r.stats.rejectedAddr.Add(1)
			c.Close()
			continue
		}
		return &countedConn{Conn: c, release: func() { l.r.conns.removeCarrier(key) }}, nil
	}
}

// countedConn releases its peer's count once when closed.
type countedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *countedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// SyscallConn exposes the socket for readiness-based reads.
func (c *countedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// admitPeer counts req's connection against its peer's carrier budget, or
// answers 503 and reports false. The caller releases the count with
// r.adm.removeCarrier.
func (r *Relay) admitPeer(w http.ResponseWriter, req *http.Request) (netip.Addr, bool) {
	peer, ignored := r.adm.peerOf(req)
	if ignored {
		r.adm.warned.Do(func() {
			r.log.Info("ignoring Forwarded/X-Forwarded-For headers from a peer not in -trusted-proxies; " +
				"if a reverse proxy runs there, add its address, or every proxy behind it shares one budget")
		})
	}
	if !r.adm.addCarrier(peer) {
		r.stats.rejectedAddr.Add(1)
		http.Error(w, "too many connections from your address", http.StatusServiceUnavailable)
		return peer, false
	}
	return peer, true
}
