package matcher

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// NAT is a peer's self-reported NAT type, already validated by the caller.
type NAT uint8

// The NAT types of the Snowflake protocol.
const (
	NATUnknown NAT = iota
	NATRestricted
	NATUnrestricted
)

// MaxBridges is the number of bridges a [Proxy.Accepts] mask can describe.
const MaxBridges = 64

// MaxStrikes is the [Proxy.Strikes] count from which more strikes no longer
// push a proxy further back: proxies with MaxStrikes or more are ordered
// among themselves by client count and arrival, like clean ones.
const MaxStrikes = 3

// pool indexes.
const (
	poolRestricted   = 0 // proxies reporting restricted or unknown NAT
	poolUnrestricted = 1 // proxies reporting unrestricted NAT
)

// state of a session; guarded by Matcher.mu.
type state uint8

const (
	stateNew     state = iota // not yet enqueued
	stateWaiting              // in a pool heap and in the session map
	stateMatched              // popped by a client; in the session map until answered
	stateDone                 // in neither
)

// Proxy is one proxy poll. The caller fills in the exported fields, which
// must not change afterwards, and passes the Proxy to [Matcher.Poll] once.
type Proxy struct {
	Sid     string // session id chosen by the proxy (validated by the caller)
	NAT     NAT    // the proxy's NAT type; decides the pool
	Strikes int    // matches the proxy recently left unanswered; fewer goes first (MaxStrikes or more count as MaxStrikes)
	Clients int    // the proxy's reported client count; fewer goes first among equal Strikes
	Accepts uint64 // bit i set = the proxy accepts bridge i's relay URL
	Type    string // proxy type from a fixed set, reported back with the answer
	Key     uint64 // the caller's opaque identity of the proxy, reported back in Answer.ProxyKey

	// All fields below are guarded by Matcher.mu, except offer, which is
	// written under mu before matched is closed and read by the poll's
	// goroutine after it observes the close.
	state   state
	penalty uint8  // Strikes clamped to 0..MaxStrikes, set by Enqueue
	index   int    // position in cls.heap while waiting
	seq     uint64 // arrival order, breaks ties between equal penalty and Clients
	cls     *class
	client  *client       // the client it was matched with
	matched chan struct{} // closed when a client takes this proxy; made by the first Await
	wake    func()        // set by Notify
	offer   Offer
}

// Offer is what a matched proxy receives: the client's offer, the client's
// NAT type and the index of the bridge the client asked for.
type Offer struct {
	SDP    string
	NAT    NAT
	Bridge int
}

// ClientOffer is a client's request for a proxy.
type ClientOffer struct {
	SDP    string // the client's offer, passed to the proxy verbatim
	NAT    NAT    // the client's NAT type
	Bridge int    // index of the bridge the client asked for, 0..MaxBridges-1
}

// Answer is what a client receives: the proxy's answer, and the Type and
// Key of the proxy that sent it.
//
// With [ErrTimedOut], ProxyType and ProxyKey describe the proxy that took
// the client's offer and had not answered when the client's time ran out
// (SDP is empty), so that the caller can hold it against the proxy. They are
// zero if no proxy held the offer then (a proxy that left before receiving
// the offer is not to blame), and with every other error.
type Answer struct {
	SDP       string
	ProxyType string
	ProxyKey  uint64
}

// client is a client waiting for one matched proxy. done is closed, under
// Matcher.mu, by whoever removes the proxy's session from the map: Answer
// (answer set) or the proxy's abandoned poll (proxyGone set).
type client struct {
	done      chan struct{}
	answer    string
	proxyGone bool
}

// Stats is a snapshot of the matcher's state.
type Stats struct {
	WaitingRestricted   int // proxies waiting in the restricted-or-unknown pool
	WaitingUnrestricted int // proxies waiting in the unrestricted pool
	Matched             int // proxies matched with a client, answer not yet delivered
}

// Matcher pairs proxies with clients. The zero value is not usable; call New.
// All methods are safe for concurrent use.
type Matcher struct {
	mu       sync.Mutex
	pools    [2]pool           // guarded by mu
	sessions map[string]*Proxy // waiting and matched sessions by Sid; guarded by mu
	// kinds counts the sessions by Type and NAT, so that SessionCounts
	// costs no walk over them; guarded by mu. Types come from a fixed
	// set, so it stays small.
	kinds  map[kind]int
	seq    uint64        // guarded by mu
	closed bool          // guarded by mu
	done   chan struct{} // closed by Close

	epoch     time.Time    // New's time, for lastMatch
	lastMatch atomic.Int64 // when a client last took a proxy, ns since epoch; -1: never

	hooks Hooks // set by SetHooks before use
}

// Hooks let a broker cluster follow the matcher (see broker/internal/cluster).
type Hooks struct {
	// Changed is called, under the matcher's lock, whenever the set of
	// bridges some waiting proxy accepts may have changed in a pool (see
	// Available). It must not block or call the Matcher.
	Changed func()
	// Matched is called, outside the lock, when a client takes the proxy of
	// session sid; the function it returns is called once that client's
	// wait for the answer ends.
	Matched func(sid string) (release func())
}

// SetHooks installs h. Call it before the Matcher is used.
func (m *Matcher) SetHooks(h Hooks) { m.hooks = h }

// Available returns the bridges (bit i = bridge i) for which a proxy waits
// that could serve a client with restricted (or unknown) NAT, and one with
// unrestricted NAT.
func (m *Matcher) Available() (restricted, unrestricted uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.pools[poolUnrestricted].accepts()
	return u, u | m.pools[poolRestricted].accepts()
}

// New returns an empty matcher.
func New() *Matcher {
	m := &Matcher{
		sessions: make(map[string]*Proxy),
		kinds:    make(map[kind]int),
		done:     make(chan struct{}),
		epoch:    time.Now(),
	}
	m.lastMatch.Store(-1)
	return m
}

// SinceLastMatch returns how long ago a client last took a proxy, or a
// negative duration if none ever did.
func (m *Matcher) SinceLastMatch() time.Duration {
	last := m.lastMatch.Load()
	if last < 0 {
		return -1
	}
	return time.Since(m.epoch) - time.Duration(last)
}

// Close makes every waiting poll return [ErrNoMatch] at once, refuses new
// polls with [ErrClosed] and new clients with [ErrNoProxies]. Proxies
// already matched still receive their offer, and their answers are still
// delivered. Close is idempotent.
func (m *Matcher) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	close(m.done)
	var wake []func()
	for _, p := range m.sessions {
		if p.state == stateWaiting && p.wake != nil {
			wake = append(wake, p.wake)
		}
	}
	m.mu.Unlock()
	for _, f := range wake {
		f()
	}
}

// Stats returns the current pool sizes.
func (m *Matcher) Stats() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := Stats{
		WaitingRestricted:   m.pools[poolRestricted].waiting,
		WaitingUnrestricted: m.pools[poolUnrestricted].waiting,
	}
	s.Matched = len(m.sessions) - s.WaitingRestricted - s.WaitingUnrestricted
	return s
}

// kind is a proxy's Type and NAT, the key of Matcher.kinds.
type kind struct {
	typ string
	nat NAT
}

// SessionCounts calls f with the number of proxies of each Type and NAT
// the matcher holds (only those with n > 0): waiting in a pool, or matched
// with a client whose answer has not yet been delivered (Snowflake's
// idToSnowflake, which its /debug page counts). Its cost does not grow with
// the number of proxies. f runs under the matcher's lock: it must be quick
// and must not call the Matcher.
func (m *Matcher) SessionCounts(f func(proxyType string, nat NAT, n int)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, n := range m.kinds {
		f(k.typ, k.nat, n)
	}
}

// addSession puts p in the session map. Caller holds mu.
func (m *Matcher) addSession(p *Proxy) {
	m.sessions[p.Sid] = p
	m.kinds[kind{p.Type, p.NAT}]++
}

// dropSession takes p out of the session map and marks it done. Caller
// holds mu.
func (m *Matcher) dropSession(p *Proxy) {
	delete(m.sessions, p.Sid)
	p.state = stateDone
	k := kind{p.Type, p.NAT}
	if m.kinds[k]--; m.kinds[k] <= 0 {
		delete(m.kinds, k)
	}
}

// Poll is Enqueue followed by Wait.
func (m *Matcher) Poll(ctx context.Context, p *Proxy, hold time.Duration) (Offer, error) {
	if err := m.Enqueue(p); err != nil {
		return Offer{}, err
	}
	return m.Wait(ctx, p, hold)
}

// Enqueue puts p in its pool. It fails with [ErrDuplicateSid] if p's Sid
// is waiting or matched (or p was enqueued before), and with [ErrClosed]
// after Close. After a successful Enqueue the caller must call Wait.
func (m *Matcher) Enqueue(p *Proxy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return ErrClosed
	}
	if p.state != stateNew {
		return ErrDuplicateSid
	}
	if _, dup := m.sessions[p.Sid]; dup {
		return ErrDuplicateSid
	}
	p.penalty = uint8(min(max(p.Strikes, 0), MaxStrikes))
	p.seq = m.seq
	m.seq++
	p.state = stateWaiting
	m.addSession(p)
	if m.poolFor(p.NAT).push(p) && m.hooks.Changed != nil {
		m.hooks.Changed()
	}
	return nil
}

// Wait waits until a client takes the enqueued p, hold passes, the matcher
// is closed or ctx ends. It returns the client's offer, [ErrNoMatch] (hold
// passed or matcher closed) or ctx's error. When Wait returns, p has left
// the pool.
//
// A proxy matched at the same moment its hold ends still gets the offer.
// If ctx ends after the match but before Wait returns, the offer is
// considered undelivered and the client is told to try another proxy.
func (m *Matcher) Wait(ctx context.Context, p *Proxy, hold time.Duration) (Offer, error) {
	offer, err := m.Await(ctx, p, hold)
	if err == ErrStillWaiting {
		return m.withdraw(p)
	}
	return offer, err
}

// Await is Wait, except that when d passes p stays in its pool and Await
// returns [ErrStillWaiting]: the caller then waits again, or goes on
// without blocking (Notify, End, Abandon).
func (m *Matcher) Await(ctx context.Context, p *Proxy, d time.Duration) (Offer, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-m.matchedChan(p):
		return p.offer, nil
	case <-timer.C:
		return Offer{}, ErrStillWaiting
	case <-m.done:
		return m.withdraw(p)
	case <-ctx.Done():
		return Offer{}, m.abandon(p, ctx.Err())
	}
}

// matchedChan returns the channel that is closed when a client takes p,
// making it on first use: a poll that never blocks in Await (one that
// waits through Notify) does without it.
func (m *Matcher) matchedChan(p *Proxy) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.matched == nil {
		if p.state != stateWaiting {
			return closedChan // taken already
		}
		p.matched = make(chan struct{})
	}
	return p.matched
}

// closedChan is a closed channel.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// Notify arranges for wake to be called when a client takes the enqueued
// p or the matcher closes, so that a poll that does not block in Wait
// learns that it must call End. It reports false, and does nothing, if
// that has already happened. wake runs outside the matcher's lock, at most
// once per cause and possibly after the poll has ended; it must not block
// or call the Matcher.
func (m *Matcher) Notify(p *Proxy, wake func()) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || p.state != stateWaiting {
		return false
	}
	p.wake = wake
	return true
}

// End ends the enqueued p's poll without waiting (its hold passed, Wake
// was called, or the matcher closed): if a client took p, End returns the
// client's offer; otherwise p leaves its pool and End returns [ErrNoMatch].
// Call End or Abandon once per enqueued p, or Abandon after End when the
// offer End returned could not be delivered.
func (m *Matcher) End(p *Proxy) (Offer, error) { return m.withdraw(p) }

// Abandon ends p's poll because the proxy went away, or releases a match
// whose offer (returned by End) could not be delivered: a waiting p leaves
// its pool; the client of a matched, unanswered p is told to try another
// proxy. It returns cause unchanged.
func (m *Matcher) Abandon(p *Proxy, cause error) error { return m.abandon(p, cause) }

// withdraw ends p's poll normally (hold passed or shutdown): if p is still
// waiting it leaves the pool and withdraw returns ErrNoMatch; if a client
// took it meanwhile, withdraw returns the offer.
func (m *Matcher) withdraw(p *Proxy) (Offer, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch p.state {
	case stateWaiting:
		m.removeWaiting(p)
		return Offer{}, ErrNoMatch
	default:
		// A client took p meanwhile (it may even have been answered or
		// given up already); the offer was set before either.
		return p.offer, nil
	}
}

// abandon ends p's poll because the proxy went away (cause is returned
// unchanged). A waiting p leaves the pool; a matched p's offer will never
// reach the proxy, so its client is released to try another proxy.
func (m *Matcher) abandon(p *Proxy, cause error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch p.state {
	case stateWaiting:
		m.removeWaiting(p)
	case stateMatched:
		m.dropSession(p)
		p.client.proxyGone = true
		close(p.client.done)
	}
	return cause
}

// removeWaiting takes a waiting p out of its pool and the map. Caller holds mu.
func (m *Matcher) removeWaiting(p *Proxy) {
	m.unpool(p)
	m.dropSession(p)
}

// unpool takes p out of its pool. Caller holds mu.
func (m *Matcher) unpool(p *Proxy) {
	if m.poolFor(p.NAT).remove(p) && m.hooks.Changed != nil {
		m.hooks.Changed()
	}
}

func (m *Matcher) poolFor(nat NAT) *pool {
	if nat == NATUnrestricted {
		return &m.pools[poolUnrestricted]
	}
	return &m.pools[poolRestricted]
}

// Rendezvous finds a proxy for c, hands it c's offer and waits for the
// proxy's answer until ctx ends. It returns [ErrNoProxies] when no waiting
// proxy can serve c, [ErrTimedOut] when ctx ends first (with the silent
// proxy's Type and Key, see [Answer]). If a matched proxy disappears before
// receiving the offer, Rendezvous tries the next one.
func (m *Matcher) Rendezvous(ctx context.Context, c ClientOffer) (Answer, error) {
	if c.Bridge < 0 || c.Bridge >= MaxBridges {
		return Answer{}, ErrBadBridge
	}
	for {
		cw := &client{done: make(chan struct{})}
		p, wake := m.match(c, cw)
		if p == nil {
			return Answer{}, ErrNoProxies
		}
		m.lastMatch.Store(int64(time.Since(m.epoch)))
		if wake != nil {
			wake()
		}
		release := func() {}
		if m.hooks.Matched != nil {
			release = m.hooks.Matched(p.Sid)
		}
		select {
		case <-cw.done:
		case <-ctx.Done():
			if m.giveUp(p, cw) {
				release()
				return Answer{ProxyType: p.Type, ProxyKey: p.Key}, ErrTimedOut
			}
			// The answer (or the proxy's departure) won the race; cw.done
			// is closed.
		}
		release()
		if !cw.proxyGone {
			return Answer{SDP: cw.answer, ProxyType: p.Type, ProxyKey: p.Key}, nil
		}
		if ctx.Err() != nil {
			return Answer{}, ErrTimedOut
		}
	}
}

// match pops the best proxy for c, hands it c's offer and makes cw its
// waiting client, or returns nil. It also returns the proxy's Notify
// function, for the caller to call.
func (m *Matcher) match(c ClientOffer, cw *client) (*Proxy, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed || c.Bridge < 0 || c.Bridge >= MaxBridges {
		return nil, nil
	}
	bit := uint64(1) << uint(c.Bridge)
	// An unrestricted client spends a restricted-or-unknown proxy first,
	// unless that pool's best has more strikes than the unrestricted
	// pool's: a proxy that is likely to leave the client waiting is worth
	// less than keeping an unrestricted proxy for a restricted client.
	var p *Proxy
	if c.NAT == NATUnrestricted {
		p = m.pools[poolRestricted].best(bit)
	}
	if p == nil || p.penalty > 0 {
		if u := m.pools[poolUnrestricted].best(bit); u != nil && (p == nil || u.penalty < p.penalty) {
			p = u
		}
	}
	if p == nil {
		return nil, nil
	}
	m.unpool(p)
	p.state = stateMatched
	p.client = cw
	p.offer = Offer(c)
	if p.matched != nil {
		close(p.matched)
	}
	return p, p.wake
}

// giveUp withdraws cw's claim on p because the client's time ran out. It
// reports false if the answer or the proxy's departure got there first.
func (m *Matcher) giveUp(p *Proxy, cw *client) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if p.state != stateMatched || p.client != cw {
		return false
	}
	m.dropSession(p)
	return true
}

// Answer delivers a proxy's answer to the client waiting on session sid and
// returns the proxy's Type. It reports false if no client is waiting on sid
// (unknown Sid, client gone, or the Sid's poll has not been matched).
func (m *Matcher) Answer(sid, sdp string) (proxyType string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p := m.sessions[sid]
	if p == nil || p.state != stateMatched {
		return "", false
	}
	m.dropSession(p)
	p.client.answer = sdp
	close(p.client.done)
	return p.Type, true
}
