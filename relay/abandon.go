package relay

import (
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// Sessions whose client is gone.
//
// A client that vanishes without closing (its last proxy died, or it was
// killed) leaves its session with unacknowledged KCP segments. kcp-go
// retransmits them for as long as the session lives, backing off only
// linearly and never giving up, and smux adds a keep-alive segment every
// 10 s that is never acknowledged either; smux's keep-alive timeout ends
// the session 4 to 8 minutes later. Every copy goes to the ClientID's
// queue, which no carrier drains: it fills (512 packets, 700 KB) and then
// drops. So the relay watches each session's carriers:
//
//   - When the ClientID has had no carrier for Config.ClientTimeout (the
//     lifetime of its queue: what is sent now can only be dropped), the
//     session goes silent: its queue is freed, what KCP sends for it is
//     dropped before it is copied or queued, and its send window shrinks
//     to one segment, so that no new data (nor smux's keep-alives) joins
//     the segments in flight; the streams' writes wait, and so their
//     targets' reads.
//   - When a carrier of the ClientID comes back after it had none (its
//     proxy was replaced), every segment in flight is retransmitted at
//     once, instead of when its timeout, grown while no proxy carried it,
//     says; a silent session is woken too: its window is restored. (So
//     they are when one of several carriers closes: see resend.)
//   - When the ClientID has had no carrier for Config.AbandonTimeout
//     (default 4 minutes, smux's keep-alive timeout: Snowflake's server
//     keeps a session without traffic at least that long), the session is
//     closed.
//
// kcp-go offers no way to stop a session's retransmission timers; a silent
// session still runs them, but each retransmission costs a look-up and no
// copy.

// silentSet is the set of silent ClientIDs of one shard, which its
// packet conn drops packets for.
type silentSet struct {
	n  atomic.Int32 // len(ids), read without the lock on every packet
	mu sync.RWMutex
	// ids is guarded by mu.
	ids map[turbotunnel.ClientID]struct{}
}

func (s *silentSet) add(id turbotunnel.ClientID) {
	s.mu.Lock()
	if s.ids == nil {
		s.ids = make(map[turbotunnel.ClientID]struct{})
	}
	s.ids[id] = struct{}{}
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

func (s *silentSet) remove(id turbotunnel.ClientID) {
	s.mu.Lock()
	delete(s.ids, id)
	s.n.Store(int32(len(s.ids)))
	s.mu.Unlock()
}

func (s *silentSet) has(addr net.Addr) bool {
	if s.n.Load() == 0 {
		return false
	}
	id, ok := turbotunnel.ClientIDFromAddr(addr)
	if !ok {
		return false
	}
	s.mu.RLock()
	_, found := s.ids[id]
	s.mu.RUnlock()
	return found
}

// shardConn is the packet conn under a shard's KCP listener: its
// QueuePacketConn, except that packets for silent ClientIDs are dropped
// (and counted) before they are copied, and resends that are held back
// are cut out of packets before they are queued (resend.go).
type shardConn struct {
	*turbotunnel.QueuePacketConn
	silent  *silentSet
	dropped *atomic.Uint64
	filters *resendFilters
	held    *atomic.Uint64
}

func (c shardConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.silent.has(addr) {
		c.dropped.Add(1)
		return len(p), nil
	}
	f := c.filters.get(addr)
	if f == nil {
		return c.QueuePacketConn.WriteTo(p, addr)
	}
	// kcp-go's buffer, which it reuses once this returns: cut in place.
	out, held := f.holdBack(p)
	if held > 0 {
		c.held.Add(uint64(held))
	}
	if len(out) > 0 {
		if _, err := c.QueuePacketConn.WriteTo(out, addr); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// startAbsence starts the clock of s, whose ClientID has just lost its last
// carrier (or started without one). r.mu must be held.
func (r *Relay) startAbsence(s *session) {
	if s.lostTimer != nil {
		s.lostTimer.Stop()
	}
	s.lostGen++
	gen := s.lostGen
	silentAfter := min(r.cfg.ClientTimeout, r.cfg.AbandonTimeout)
	s.lostTimer = time.AfterFunc(silentAfter, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if s.lostGen != gen {
			return
		}
		r.silence(s, true)
		s.lostTimer = time.AfterFunc(r.cfg.AbandonTimeout-silentAfter, func() {
			r.mu.Lock()
			current := s.lostGen == gen
			r.mu.Unlock()
			if current {
				r.stats.sessionsAbandoned.Add(1)
				s.close()
			}
		})
	})
}

// endAbsence stops the clock of s, whose ClientID has a carrier again (or
// which has ended), and wakes s if it was silent. r.mu must be held.
func (r *Relay) endAbsence(s *session) {
	s.lostGen++
	if s.lostTimer != nil {
		s.lostTimer.Stop()
	}
	r.silence(s, false)
}

// silence makes s silent or wakes it. r.mu must be held: it orders the
// changes.
func (r *Relay) silence(s *session, silent bool) {
	if s.silent == silent {
		return
	}
	s.silent = silent
	sh := r.shardFor(s.id)
	if silent {
		sh.silent.add(s.id)
		// One segment: nothing joins those in flight. (kcp-go keeps
		// the window at 1 at least, and a zero argument changes nothing.)
		s.kcp.SetWindowSize(1, 0)
		// A packet that passed the silent check just before may still
		// make a new queue; nothing refreshes it, so it expires.
		sh.pconn.Forget(s.id.Addr())
		r.stats.sessionsSilent.Add(1)
		return
	}
	r.stats.sessionsSilent.Add(-1)
	sh.silent.remove(s.id)
	s.kcp.SetWindowSize(s.window.applied, 0)
}

// resume ends the absence of s, whose ClientID has a carrier again after
// it had none, and resends what is in flight. r.mu must be held.
func (r *Relay) resume(s *session) {
	r.endAbsence(s)
	r.resend(s)
}

// resend retransmits every segment of s in flight at KCP's next flush,
// through the carriers its ClientID has now: a carrier of it closed (what
// that carrier held is gone) or came after none (each timer grew while no
// carrier took the copies). The ClientID's queue is emptied first: every
// data segment in it is in flight and so goes again, and the
// acknowledgements in it are stale; the copies would wait behind it
// (1 024 packets, seconds at a new proxy's first rate). r.mu must be held.
func (r *Relay) resend(s *session) {
	r.shardFor(s.id).pconn.Drain(s.id.Addr())
	s.kcp.ResetRTO()
	r.stats.sessionsResent.Add(1)
}
