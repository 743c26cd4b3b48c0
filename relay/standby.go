package relay

import (
	"sync"
	"sync/atomic"
	"time"
)

// A client may keep a proxy connected that it sends nothing through, to
// take over at once when the proxy in use is lost (Flurry's client with
// standby). Its carrier must then take none of the client's packets: the
// carriers of a client drain one queue, and a standby that took a share
// would carry half of a download and stall with the proxy in use wherever
// their paths share a bottleneck. So a carrier takes packets while it is
// in use, having delivered a packet within inUseFor, or while no other
// carrier of its client is.
//
// When a carrier in use leaves (its proxy was killed: its WebSocket closed
// at once), a carrier not in use sends one message, which tells the client
// to switch to it, and then waits again until the client's first packet
// through it, at most inUseFor: that packet's acknowledgement (una) tells
// what the client holds, and the copies of it that the relay's KCP resends
// meanwhile are cut (resend.go) instead of filling the new proxy's first,
// slow round trips.
//
// Snowflake's client, and Flurry's with several proxies in use, send
// through every carrier they use, so nothing changes for them, but for one
// case: a new carrier whose client's old one still hangs (its proxy gone
// without a word, no connection closed) waits until the old one has been
// silent for inUseFor, instead of sharing packets with it.

// inUseFor is how long a carrier counts as in use after it delivered a
// packet. A client that is receiving acknowledges many times a second, but
// on a long lossy path its acknowledgements stall for a second or two
// behind its proxy's own retransmissions (SCTP's); with one second the
// standby took over at such stalls, and a kill that followed found the
// client between proxies (the path lab's `mobile`, docs/performance.md).
const inUseFor = clock(3 * time.Second)

// deliveryGrain is how far apart a carrier records its deliveries: finer
// than inUseFor needs, and coarse enough to cost nothing per packet.
const deliveryGrain = inUseFor / 64

// deliveries is what a client's carriers know of each other's use.
type deliveries struct {
	// last is when a carrier of the client last delivered a packet (a
	// clock; 0 since a carrier in use left), and leftAt when a carrier in
	// use last left (0: none yet).
	last, leftAt atomic.Int64

	mu   sync.Mutex
	left chan struct{} // closed when a carrier in use leaves; nil until a carrier waits
}

// leftChan returns a channel closed when the next carrier in use leaves.
func (d *deliveries) leftChan() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left == nil {
		d.left = make(chan struct{})
	}
	return d.left
}

// carrierLeft records that a carrier in use left at now: the others may
// send a message each.
func (d *deliveries) carrierLeft(now clock) {
	d.leftAt.Store(int64(max(now, 1)))
	d.last.Store(0)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.left != nil {
		close(d.left)
		d.left = nil
	}
}

// noteDelivery records that the carrier delivered a packet at now, and
// wakes its writer if that waits.
func (c *carrier) noteDelivery(now clock) {
	if last := clock(c.delivered.Load()); last != 0 && now-last < deliveryGrain {
		return
	}
	now = max(now, 1) // 0 means none
	c.delivered.Store(int64(now))
	c.client.deliveries.last.Store(int64(now))
	if c.standing.Load() {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// inUse reports whether the carrier delivered a packet within inUseFor.
func (c *carrier) inUse(now clock) bool {
	mine := clock(c.delivered.Load())
	return mine != 0 && now-mine <= inUseFor
}

// standsBy reports whether the carrier takes none of its client's packets
// at now, and until when at least, unless it delivers one or a carrier in
// use leaves: while another carrier is in use, and after the one message
// it sent since a carrier in use left (nudged).
func (c *carrier) standsBy(now clock) (until clock, standing bool) {
	if c.inUse(now) {
		return 0, false
	}
	d := &c.client.deliveries
	if last := clock(d.last.Load()); last != 0 && now-last <= inUseFor {
		return last + inUseFor, true
	}
	if left := clock(d.leftAt.Load()); left != 0 && left == c.nudged && now-left <= inUseFor {
		return left + inUseFor, true
	}
	return 0, false
}

// sent records that the writer sent a message: after a carrier in use
// left, the one a carrier not in use may send.
func (c *carrier) sent() {
	c.nudged = clock(c.client.deliveries.leftAt.Load())
}

// standBy waits while the carrier stands by. It reports whether it
// waited, and false in ok once the writer must stop.
func (c *carrier) standBy() (waited, ok bool) {
	for {
		if _, standing := c.standsBy(c.r.now()); !standing {
			return waited, true
		}
		c.standing.Store(true)
		left := c.client.deliveries.leftChan()
		// Look again now that the reader and the leaving carrier know.
		now := c.r.now()
		until, standing := c.standsBy(now)
		if !standing {
			c.standing.Store(false)
			return waited, true
		}
		waited = true
		c.r.stats.connsStandingBy.Add(1)
		t := time.NewTimer(time.Duration(until - now))
		select {
		case <-c.stopWriter:
			ok = false
		case <-c.wake:
			ok = true
		case <-left:
			ok = true
		case <-t.C:
			ok = true
		}
		t.Stop()
		c.r.stats.connsStandingBy.Add(-1)
		c.standing.Store(false)
		if !ok {
			return waited, false
		}
	}
}
