package relay

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/flurrypt/flurry/internal/clientaddr"
	"github.com/flurrypt/flurry/internal/peerlimit"
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
func peerKey(addr netip.Addr) netip.Addr { return peerlimit.Key(addr) }

// peerBudget is what one peer key holds. It is kept small: in a relay
// whose proxies each hold one carrier (the common case), there is one per
// carrier.
type peerBudget struct {
	carriers int32 // open connections (handler: upgraded or upgrading carriers)
	// The new-session token bucket: tokens as of filled (nanoseconds
	// since the admission's epoch). A budget that has never started a
	// session has filled == 0 and a full bucket.
	tokens float64
	filled int64
}

// admission tracks the budgets of peer keys. It has its own lock: the
// relay's lock guards sessions and ClientIDs.
type admission struct {
	maxCarriers int     // per key; <= 0: no limit
	sessionRate float64 // new sessions per second, per key; 0: no limit
	burst       float64
	epoch       time.Time // origin of peerBudget.filled
	resolver    *clientaddr.Resolver
	warned      sync.Once // forwarding headers from an untrusted peer

	mu        sync.Mutex
	peers     map[netip.Addr]*peerBudget // guarded by mu
	lastSweep int64                      // guarded by mu; on the clock of now
}

// sweepInterval is how often budgets that are back to full and unused are
// forgotten (an address that returns gets a full one anyway).
const sweepInterval = 10 * time.Second

func newAdmission(cfg Config) *admission {
	a := &admission{
		maxCarriers: cfg.MaxCarriersPerAddr,
		burst:       float64(cfg.NewSessionBurst),
		epoch:       time.Now(),
		resolver:    clientaddr.New(cfg.TrustedProxies),
		peers:       make(map[netip.Addr]*peerBudget),
	}
	if cfg.NewSessionRate > 0 {
		a.sessionRate = cfg.NewSessionRate
	}
	return a
}

// peerOf returns the key of the peer behind req, and whether req carried
// forwarding headers that were ignored because its peer is not trusted.
func (a *admission) peerOf(req *http.Request) (netip.Addr, bool) {
	return peerKey(a.resolver.Addr(req)), a.resolver.IgnoredForwarding(req)
}

// budget returns key's budget, creating it; a.mu must be held.
func (a *admission) budget(key netip.Addr, now int64) *peerBudget {
	if now-a.lastSweep > int64(sweepInterval) {
		a.sweep(now)
	}
	b := a.peers[key]
	if b == nil {
		b = &peerBudget{}
		a.peers[key] = b
	}
	return b
}

// now is the admission's clock for budgets.
func (a *admission) now() int64 { return int64(time.Since(a.epoch)) }

// sweep forgets unused budgets; a.mu must be held.
func (a *admission) sweep(now int64) {
	a.lastSweep = now
	for k, b := range a.peers {
		if a.idle(b, now) {
			delete(a.peers, k)
		}
	}
}

// tokens returns b's session tokens at now.
func (a *admission) tokens(b *peerBudget, now int64) float64 {
	if b.filled == 0 {
		return a.burst
	}
	return min(a.burst, b.tokens+float64(now-b.filled)*a.sessionRate/1e9)
}

// idle reports whether b holds nothing a fresh budget would not.
func (a *admission) idle(b *peerBudget, now int64) bool {
	return b.carriers <= 0 && (a.sessionRate == 0 || a.tokens(b, now) >= a.burst)
}

// addCarrier counts a new connection from key, or reports false if key
// holds its maximum already.
func (a *admission) addCarrier(key netip.Addr) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	b := a.budget(key, a.now())
	if a.maxCarriers > 0 && int(b.carriers) >= a.maxCarriers {
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
	if a.idle(b, a.now()) {
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
	now := max(a.now(), 1) // filled == 0 means "never used"
	b := a.budget(key, now)
	t := a.tokens(b, now)
	if t < 1 {
		return false
	}
	b.tokens, b.filled = t-1, now
	return true
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

// countAtAccept counts a connection Serve accepted against its TCP peer's
// carrier budget (r.conns), unless the peer is a trusted proxy, whose
// clients the handler tells apart by their forwarded addresses. It returns
// the key counted (invalid if none), or false if the peer holds its
// maximum already. The count is released by readRequest if the connection
// opens no carrier, else by the carrier's end (releasePeer).
func (r *Relay) countAtAccept(c net.Conn) (netip.Addr, bool) {
	ap, err := netip.ParseAddrPort(c.RemoteAddr().String())
	if err != nil || r.cfg.trusts(ap.Addr()) {
		return netip.Addr{}, true
	}
	key := peerKey(ap.Addr())
	if !r.conns.addCarrier(key) {
		r.stats.rejectedAddr.Add(1)
		return key, false
	}
	return key, true
}

// admitPeer counts req's connection against its peer's carrier budget
// (r.adm), or answers 503 and reports false. It reports whether it
// counted: a connection that Serve counted at accept under the same key
// is not counted twice (nor does it get a second budget).
func (r *Relay) admitPeer(w http.ResponseWriter, req *http.Request) (peer netip.Addr, counted, ok bool) {
	peer, ignored := r.adm.peerOf(req)
	if ignored {
		r.adm.warned.Do(func() {
			r.log.Info("ignoring Forwarded/X-Forwarded-For headers from a peer not in -trusted-proxies; " +
				"if a reverse proxy runs there, add its address, or every proxy behind it shares one budget")
		})
	}
	if rw, isOurs := w.(*responseWriter); isOurs && rw.counted.IsValid() && rw.counted == peer {
		return peer, false, true
	}
	if !r.adm.addCarrier(peer) {
		r.stats.rejectedAddr.Add(1)
		http.Error(w, "too many connections from your address", http.StatusServiceUnavailable)
		return peer, false, false
	}
	return peer, true, true
}
