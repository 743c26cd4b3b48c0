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
// carrier of its client is. Snowflake's client, and Flurry's with several
// proxies in use, send through every carrier they use, so nothing changes
// for them, but for one thing: a new carrier whose client's old one still
// hangs (its proxy gone without a word, no connection closed) waits until
// the old one has been silent for inUseFor, instead of sharing packets
// with it.

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
	// clock; 0 since a carrier in use left).
	last atomic.Int64

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

// carrierLeft records that a carrier in use left: the others may take
// packets until one of them delivers.
func (d *deliveries) carrierLeft() {
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
	if now-clock(c.delivered.Load()) < deliveryGrain {
		return
	}
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
// use leaves.
func (c *carrier) standsBy(now clock) (until clock, standing bool) {
	last := clock(c.client.deliveries.last.Load())
	if last == 0 || now-last > inUseFor || c.inUse(now) {
		return 0, false
	}
	return last + inUseFor, true
}

// standBy waits while the carrier stands by. It reports whether it
// waited, and false in ok once the writer must stop.
func (c *carrier) standBy() (waited, ok bool) {
	for {
		now := c.r.now()
		until, standing := c.standsBy(now)
		if !standing {
			return waited, true
		}
		c.standing.Store(true)
		left := c.client.deliveries.leftChan()
		// Look again now that the reader and the leaving carrier know.
		if until, standing = c.standsBy(c.r.now()); !standing {
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
