package relay

import (
	"math/bits"
	"net"
	"sync"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// The relay holds back KCP's resends of segments that are only waiting.
//
// Below the relay's KCP the path to the client is reliable and ordered: the
// carrier's WebSocket (TCP) to the proxy, then the proxy's ordered, reliable
// DataChannel (SCTP) to the client. A segment that went out on a carrier
// reaches the client unless the carrier dies with it or a queue on the way
// drops it (the client's incoming queue, when full). kcp-go knows none of
// this: its timeout is at least 100 ms, with no setter, while SCTP waits at
// least 1 s for a lost retransmission (pion's T3 timer), so during every
// such stall the relay's KCP sends its whole window again, and on a slow
// bottleneck a third of the path carried copies the client throws away
// (docs/relay.md, "Resends").
//
// So each ClientID has a resendFilter that remembers, for each segment
// number in the session's send window, which carrier took the segment's
// last transmission and when. The shard's packet conn passes every packet
// KCP writes through it before it is queued (holdBack), and a carrier's
// writer again when it takes one (filter), which records where it went: a
// PUSH segment sent before on a carrier that is still alive
// less than resendHold ago is cut out of the packet (another live carrier
// of a multipath session would only carry a copy too), unless the client
// has since acknowledged a segment that went out later on that carrier:
// the carrier's path is in order, so the earlier one was dropped on the way
// (the client's queue was full), and goes out again now. It goes out too
// once that carrier has died, or once resendHold has passed. ACKs and
// window probes and announcements always pass. KCP itself is not touched:
// it counts a held segment as resent and backs its timeout off, as it would
// for a lost one.
//
// Times are KCP's own: a segment's header carries the time of its
// transmission (ts, ms), and an ACK the time of the transmission it
// acknowledges, so the filter knows which transmission of a segment
// arrived and needs no clock of its own.

// resendHold bounds how long a resend is held after the segment's previous
// transmission: 1 s, pion's lowest retransmission timeout, within which SCTP
// may still be repairing the segment's DataChannel message, plus two of the
// session's smoothed KCP round trips, one for the repaired message to reach
// the client and its acknowledgement to come back, one for the queues on
// the way. The round trip is KCP's, which grows during SCTP's stalls (the
// acknowledgements of the waiting segments come late), so the hold grows
// with them. At most maxResendHold: a segment lost where the filter cannot
// see it (in the last segments of a burst, with nothing after it to be
// acknowledged) waits no longer than that for its repair.
func resendHold(srtt time.Duration) time.Duration {
	return min(minResendHold+2*srtt, maxResendHold)
}

const (
	minResendHold = time.Second
	maxResendHold = 4 * time.Second
	// resendTickShift sets the unit of the filter's times, KCP's
	// milliseconds over 2^4: an entry's time fits 16 bits and wraps after
	// 17 minutes, far beyond any segment's life in a send window.
	resendTickShift = 4
	// maxCarrierNum is the highest carrier number: numbers are one byte,
	// and 0 marks an empty entry.
	maxCarrierNum = 255
	// deliveredSlots is how many carriers' latest acknowledged
	// transmissions the filter remembers: a client uses one proxy at a
	// time, or a few at once.
	deliveredSlots = 4
)

// resendTime converts KCP's time (ms) to the filter's.
func resendTime(ts uint32) uint16 { return uint16(ts >> resendTickShift) }

// resendTicks converts a duration to the filter's time units, rounded up.
func resendTicks(d time.Duration) uint16 {
	return uint16((d.Milliseconds() + 1<<resendTickShift - 1) >> resendTickShift)
}

// resendFilter is one ClientID's record of the carriers that took its
// session's segments. Its size is fixed but for the ring, 4 bytes per
// segment of the largest send window the session has had (update), not
// allocated until the session sends: TestResendFilterSize states it.
type resendFilter struct {
	mu   sync.Mutex
	conv uint32 // the KCP conversation the ring is about
	// una is the client's latest cumulative acknowledgement (KCP's una:
	// it holds every segment below), if unaKnown.
	una      uint32
	started  bool // conv and lastSN are set
	unaKnown bool
	// lapShift is log2(len(ring)): sn>>lapShift is the segment's lap.
	lapShift uint8
	lastNum  uint8 // the carrier number last handed out
	// lastSN is the highest sn recorded (in sn's circular order), from
	// which a growing ring recovers the sn of its entries.
	lastSN uint32
	hold   uint16 // resendHold in the filter's time units
	// ring holds, at sn mod len(ring), an entry for the last segment with
	// such a number that went out on a carrier; nil until update.
	ring []resendEntry
	live [4]uint64 // bit n: carrier number n is alive
	// deliveredNum[i] is a carrier number (0: none) and deliveredAt[i]
	// the time of the latest transmission on it that the client
	// acknowledged: what went out on it before was delivered or dropped.
	deliveredNum [deliveredSlots]uint8
	deliveredAt  [deliveredSlots]uint16
}

// A resendEntry packs the segment's lap (8 bits), the carrier number that
// took its last transmission (8 bits, 0 for none) and the time it did
// (16 bits, resendTime).
type resendEntry uint32

func newResendEntry(lap, num uint8, at uint16) resendEntry {
	return resendEntry(uint32(lap)<<24 | uint32(num)<<16 | uint32(at))
}

func (e resendEntry) lap() uint8  { return uint8(e >> 24) }
func (e resendEntry) num() uint8  { return uint8(e >> 16) }
func (e resendEntry) at() uint16  { return uint16(e) }
func (e resendEntry) empty() bool { return e.num() == 0 }

// addCarrier returns a number for a new carrier, marked alive: one that no
// live carrier has, the next after the last one handed out. 0 means all
// are taken (255 live carriers): such a carrier's packets pass unfiltered.
func (f *resendFilter) addCarrier() uint8 {
	f.mu.Lock()
	defer f.mu.Unlock()
	for range maxCarrierNum {
		f.lastNum++
		if f.lastNum == 0 {
			f.lastNum = 1
		}
		if !f.alive(f.lastNum) {
			f.live[f.lastNum/64] |= 1 << (f.lastNum % 64)
			f.forgetDelivered(f.lastNum)
			return f.lastNum
		}
	}
	return 0
}

// dropCarrier marks carrier number num dead: the segments it took go out
// again at KCP's next resend. It may be called more than once.
func (f *resendFilter) dropCarrier(num uint8) {
	f.mu.Lock()
	f.live[num/64] &^= 1 << (num % 64)
	f.forgetDelivered(num)
	f.mu.Unlock()
}

// forgetDelivered clears what was acknowledged of carrier number num; f.mu
// is held.
func (f *resendFilter) forgetDelivered(num uint8) {
	for i, n := range f.deliveredNum {
		if n == num {
			f.deliveredNum[i] = 0
		}
	}
}

// markDelivered records that the client acknowledged a transmission on
// carrier number num at time at; f.mu is held. A carrier without a slot
// takes an empty one, or that of a dead carrier, or else the one with the
// oldest time.
func (f *resendFilter) markDelivered(num uint8, at uint16) {
	for i, n := range f.deliveredNum {
		if n == num {
			if int16(at-f.deliveredAt[i]) > 0 {
				f.deliveredAt[i] = at
			}
			return
		}
	}
	slot := 0
	for i, n := range f.deliveredNum {
		if n == 0 || !f.alive(n) {
			slot = i
			break
		}
		if int16(f.deliveredAt[slot]-f.deliveredAt[i]) > 0 {
			slot = i
		}
	}
	f.deliveredNum[slot], f.deliveredAt[slot] = num, at
}

// deliveredAfter reports whether the client acknowledged a transmission on
// carrier number num made after time at; f.mu is held.
func (f *resendFilter) deliveredAfter(num uint8, at uint16) bool {
	for i, n := range f.deliveredNum {
		if n == num && int16(f.deliveredAt[i]-at) > 0 {
			return true
		}
	}
	return false
}

// alive reports whether carrier number num is alive; f.mu is held.
func (f *resendFilter) alive(num uint8) bool {
	return f.live[num/64]&(1<<(num%64)) != 0
}

// update sets the hold from the session's smoothed round trip, and makes
// the ring hold at least wnd segments (a send window: the segments in
// flight are never further apart). It allocates when the ring grows, so it
// runs on the send window's tick, off the data path.
func (f *resendFilter) update(srtt time.Duration, wnd int) {
	n := 1 << bits.Len(uint(max(wnd, 1)-1)) // wnd rounded up to a power of two
	f.mu.Lock()
	f.hold = resendTicks(resendHold(srtt))
	grow := len(f.ring) < n
	f.mu.Unlock()
	if !grow {
		return
	}
	ring := make([]resendEntry, n) // not under the lock the writers take
	f.mu.Lock()
	if len(f.ring) < n {
		f.regrow(ring)
	}
	f.mu.Unlock()
}

// regrow moves the entries into ring, larger than f.ring; f.mu is held.
// Windows grow while the session sends, and segments may be waiting: an
// entry lost here would let a copy through. An entry gives its sn modulo
// 256 × len(f.ring) (its lap and slot); the sn is the one so congruent at or
// below lastSN, since what is in flight lies within a window below it.
func (f *resendFilter) regrow(ring []resendEntry) {
	oldShift := f.lapShift
	f.lapShift = uint8(bits.TrailingZeros(uint(len(ring))))
	period := uint32(len(f.ring)) << 8 // 256 laps
	for i, e := range f.ring {
		if e.empty() {
			continue
		}
		low := uint32(e.lap())<<oldShift | uint32(i)
		sn := f.lastSN - (f.lastSN-low)&(period-1)
		ring[sn&uint32(len(ring)-1)] = newResendEntry(uint8(sn>>f.lapShift), e.num(), e.at())
	}
	f.ring = ring
}

// resendCounts counts a packet's PUSH segments as filter saw them.
type resendCounts struct {
	held   int // resends cut out
	resent int // resends let through (their sn is not above every sn sent)
	sent   int // all let through, first transmissions and resends
}

// filter removes from the KCP packet p, taken by carrier number num, the
// PUSH segments whose resend is held, records the others,
// and returns what remains of p (in place: it allocates nothing), empty if
// nothing does. A packet that does not parse is left as it is from the
// first segment that does not; it reaches the client's KCP as it would
// have without the filter.
func (f *resendFilter) filter(p []byte, num uint8) (out []byte, n resendCounts) {
	if num == 0 {
		return p, n
	}
	return f.cut(p, num)
}

// holdBack is filter for a packet KCP is about to queue for the client,
// before any carrier takes it: it removes the resends that are held, and
// records nothing. A carrier's writer may hold back more (filter): what
// went out before may still have been queued here. Held resends would
// otherwise fill the client's queue while its carrier waits for the
// proxy, and crowd out new segments and ACKs (the queue drops what does
// not fit).
func (f *resendFilter) holdBack(p []byte) (out []byte, held int) {
	out, n := f.cut(p, 0)
	return out, n.held
}

// cut is filter, and holdBack with num 0.
func (f *resendFilter) cut(p []byte, num uint8) (out []byte, n resendCounts) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ring == nil {
		return p, n
	}
	out = p[:0]
	rest := p
	for len(rest) > 0 {
		seg, next, ok := turbotunnel.NextKCPSegment(rest)
		if !ok {
			seg, next = turbotunnel.KCPSegment(rest), nil
		}
		rest = next
		if ok && seg.Cmd() == turbotunnel.KCPCmdPush && !f.push(seg, num, &n) {
			n.held++
			continue
		}
		if n.held == 0 {
			out = p[:len(out)+len(seg)] // nothing cut yet: it is in place
		} else {
			out = append(out, seg...) // moves it down over what was cut
		}
	}
	return out, n
}

// push decides on the PUSH segment seg: false if its resend is held.
// Unless num is 0, it records the segment as taken by carrier number num
// and counts it in n. f.mu is held, f.ring is not nil.
func (f *resendFilter) push(seg turbotunnel.KCPSegment, num uint8, n *resendCounts) bool {
	sn, conv := seg.SN(), seg.Conv()
	if conv != f.conv || !f.started {
		if num == 0 {
			return true // not the conversation the ring is about
		}
		// A new session for the ClientID: forget the old one's.
		clear(f.ring)
		f.conv, f.lastSN, f.started, f.unaKnown = conv, sn-1, true, false
	}
	if f.unaKnown && int32(sn-f.una) < 0 {
		return false // the client has it: a copy that waited in the queue
	}
	slot := &f.ring[sn&uint32(len(f.ring)-1)]
	lap := uint8(sn >> f.lapShift)
	at := resendTime(seg.TS())
	if e := *slot; !e.empty() && e.lap() == lap && f.alive(e.num()) && at-e.at() < f.hold && !f.deliveredAfter(e.num(), e.at()) {
		return false
	}
	if num == 0 {
		return true
	}
	*slot = newResendEntry(lap, num, at)
	// KCP numbers new segments in order, so one not above every number
	// sent is a resend.
	if int32(sn-f.lastSN) > 0 {
		f.lastSN = sn
	} else {
		n.resent++
	}
	n.sent++
	return true
}

// acked reads the ACKs in p, a KCP packet from the client: each one that
// acknowledges the last transmission of its segment tells that the
// carrier which took it delivered everything it took before. Every
// segment's una tells what the client holds, so that a copy of it still
// waiting in the client's queue is cut (push): when a carrier dies, the
// relay's KCP resends its whole window, most of which the client may have
// had from the dead carrier already.
func (f *resendFilter) acked(p []byte) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ring == nil || !f.started {
		return
	}
	mask := uint32(len(f.ring) - 1)
	for {
		seg, rest, ok := turbotunnel.NextKCPSegment(p)
		if !ok {
			return
		}
		p = rest
		if seg.Conv() != f.conv {
			continue
		}
		if una := seg.Una(); !f.unaKnown || int32(una-f.una) > 0 {
			f.una, f.unaKnown = una, true
		}
		if seg.Cmd() != turbotunnel.KCPCmdAck {
			continue
		}
		sn := seg.SN()
		e := f.ring[sn&mask]
		if !e.empty() && e.lap() == uint8(sn>>f.lapShift) && e.at() == resendTime(seg.TS()) && f.alive(e.num()) {
			f.markDelivered(e.num(), e.at())
		}
	}
}

// resendFilters are the resend filters of a shard's ClientIDs that have a
// live session, which the shard's packet conn applies (holdBack) before it
// queues a packet.
type resendFilters struct {
	mu sync.RWMutex
	m  map[turbotunnel.ClientID]*resendFilter // guarded by mu
}

func (s *resendFilters) add(id turbotunnel.ClientID, f *resendFilter) {
	s.mu.Lock()
	if s.m == nil {
		s.m = make(map[turbotunnel.ClientID]*resendFilter)
	}
	s.m[id] = f
	s.mu.Unlock()
}

func (s *resendFilters) remove(id turbotunnel.ClientID) {
	s.mu.Lock()
	delete(s.m, id)
	s.mu.Unlock()
}

// get returns the filter of the ClientID of addr, nil if none.
func (s *resendFilters) get(addr net.Addr) *resendFilter {
	id, ok := turbotunnel.ClientIDFromAddr(addr)
	if !ok {
		return nil
	}
	s.mu.RLock()
	f := s.m[id]
	s.mu.RUnlock()
	return f
}
