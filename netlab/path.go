package netlab

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"
)

// bufSize is the size of a pooled packet buffer. The lab's TUN devices have
// an MTU of 1500 and no offloads, so no packet read from them is larger.
const bufSize = 2048

// mtu is the MTU of both TUN devices.
const mtu = 1500

// packet is a pooled packet buffer with its place in a path's queue.
type packet struct {
	due time.Time // when it leaves the path
	seq uint64    // arrival order, to break ties in due
	n   int       // length of the packet in buf
	buf [bufSize]byte
}

func (p *packet) bytes() []byte { return p.buf[:p.n] }

// packetPool hands out packet buffers.
type packetPool struct{ p sync.Pool }

func newPacketPool() *packetPool {
	return &packetPool{p: sync.Pool{New: func() any { return new(packet) }}}
}

func (pp *packetPool) get() *packet  { return pp.p.Get().(*packet) }
func (pp *packetPool) put(p *packet) { pp.p.Put(p) }

// packetWriter is where a path delivers packets: a TUN device, or a
// counter in benchmarks and fuzz targets.
type packetWriter interface {
	Write(pkt []byte) (int, error)
}

// DirStats counts the packets of one direction.
type DirStats struct {
	// Packets and Bytes came into the box.
	Packets, Bytes uint64
	// CensorDropped packets were dropped by the censor program.
	CensorDropped uint64
	// LossDropped packets were lost at random (Profile.Loss).
	LossDropped uint64
	// QueueDropped packets found the queue full: more queueing delay than
	// Profile.Queue at Profile.Rate, or Config.MaxQueuedPackets queued.
	QueueDropped uint64
	// Delivered packets (DeliveredBytes bytes) were written out.
	Delivered, DeliveredBytes uint64
	// WriteErrors counts packets the outgoing TUN device refused.
	WriteErrors uint64
}

// Dropped is the number of packets the box dropped, for any reason.
func (s DirStats) Dropped() uint64 { return s.CensorDropped + s.LossDropped + s.QueueDropped }

// sub returns s - o, field by field.
func (s DirStats) sub(o DirStats) DirStats {
	return DirStats{
		Packets: s.Packets - o.Packets, Bytes: s.Bytes - o.Bytes,
		CensorDropped: s.CensorDropped - o.CensorDropped, LossDropped: s.LossDropped - o.LossDropped,
		QueueDropped: s.QueueDropped - o.QueueDropped, Delivered: s.Delivered - o.Delivered,
		DeliveredBytes: s.DeliveredBytes - o.DeliveredBytes, WriteErrors: s.WriteErrors - o.WriteErrors,
	}
}

// counters are a direction's statistics, updated atomically.
type counters struct {
	packets, bytes, censorDropped, lossDropped, queueDropped atomic.Uint64
	delivered, deliveredBytes, writeErrors                   atomic.Uint64
}

func (c *counters) snapshot() DirStats {
	return DirStats{
		Packets: c.packets.Load(), Bytes: c.bytes.Load(),
		CensorDropped: c.censorDropped.Load(), LossDropped: c.lossDropped.Load(),
		QueueDropped: c.queueDropped.Load(), Delivered: c.delivered.Load(),
		DeliveredBytes: c.deliveredBytes.Load(), WriteErrors: c.writeErrors.Load(),
	}
}

// path shapes one direction: it delays, drops and rate-limits packets
// according to a Profile and writes them out in order of departure. Packets
// wait in a time-ordered queue served by one goroutine (run) with one timer;
// a perfect profile with an empty queue forwards at once, on the caller's
// goroutine.
type path struct {
	out       packetWriter
	pool      *packetPool
	stats     *counters
	maxQueued int
	wake      chan struct{} // capacity 1: the queue's head changed

	mu         sync.Mutex
	prof       Profile    // guarded by mu
	rng        *rand.Rand // guarded by mu
	queue      pktHeap    // guarded by mu
	inflight   int        // guarded by mu: queued or being written by run
	linkFree   time.Time  // guarded by mu: when the bottleneck is idle again
	lastDepart time.Time  // guarded by mu: latest departure handed out
	seq        uint64     // guarded by mu
}

func newPath(out packetWriter, pool *packetPool, stats *counters, prof Profile, seed uint64, maxQueued int) *path {
	return &path{
		out:       out,
		pool:      pool,
		stats:     stats,
		maxQueued: maxQueued,
		wake:      make(chan struct{}, 1),
		prof:      prof,
		rng:       rand.New(rand.NewPCG(seed, 0x6e65746c6162)),
	}
}

// submit takes ownership of pk, which arrived at now, and queues,
// forwards or drops it.
func (p *path) submit(now time.Time, pk *packet) {
	p.mu.Lock()
	prof := p.prof
	if prof.perfect() && p.inflight == 0 {
		p.mu.Unlock()
		p.deliver(pk)
		return
	}
	if prof.Loss > 0 && p.rng.Float64() < prof.Loss {
		p.mu.Unlock()
		p.stats.lossDropped.Add(1)
		p.pool.put(pk)
		return
	}
	if p.inflight >= p.maxQueued {
		p.mu.Unlock()
		p.stats.queueDropped.Add(1)
		p.pool.put(pk)
		return
	}
	depart := now
	if prof.Rate > 0 {
		start := now
		if p.linkFree.After(now) {
			start = p.linkFree
		}
		if start.Sub(now) > prof.queue() {
			p.mu.Unlock()
			p.stats.queueDropped.Add(1)
			p.pool.put(pk)
			return
		}
		p.linkFree = start.Add(time.Duration(int64(pk.n) * 8 * int64(time.Second) / prof.Rate))
		depart = p.linkFree
	}
	delay := prof.Delay
	if prof.Jitter > 0 {
		z := min(max(p.rng.NormFloat64(), -3), 3)
		delay = max(0, delay+time.Duration(z*float64(prof.Jitter)))
	}
	depart = depart.Add(delay)
	if depart.Before(p.lastDepart) {
		if !prof.Reorder {
			depart = p.lastDepart
		}
	} else {
		p.lastDepart = depart
	}
	pk.due, pk.seq = depart, p.seq
	p.seq++
	p.queue.push(pk)
	p.inflight++
	head := p.queue[0] == pk
	p.mu.Unlock()
	if head {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// deliver writes pk out and returns it to the pool.
func (p *path) deliver(pk *packet) {
	if _, err := p.out.Write(pk.bytes()); err != nil {
		p.stats.writeErrors.Add(1)
	} else {
		p.stats.delivered.Add(1)
		p.stats.deliveredBytes.Add(uint64(pk.n))
	}
	p.pool.put(pk)
}

// maxBatch is the most packets run takes from the queue at once.
const maxBatch = 64

// run writes queued packets out when they are due, until done is closed;
// then it frees what is still queued.
func (p *path) run(done <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	batch := make([]*packet, 0, maxBatch)
	for {
		p.mu.Lock()
		now := time.Now()
		for len(p.queue) > 0 && len(batch) < maxBatch && !p.queue[0].due.After(now) {
			batch = append(batch, p.queue.pop())
		}
		wait := time.Duration(-1)
		if len(p.queue) > 0 {
			wait = p.queue[0].due.Sub(now)
		}
		p.mu.Unlock()
		if len(batch) > 0 {
			for i, pk := range batch {
				p.deliver(pk)
				batch[i] = nil
			}
			p.mu.Lock()
			p.inflight -= len(batch)
			p.mu.Unlock()
			full := len(batch) == maxBatch
			batch = batch[:0]
			if full {
				continue
			}
		}
		if wait >= 0 {
			timer.Reset(wait)
		}
		select {
		case <-done:
			p.mu.Lock()
			for len(p.queue) > 0 {
				p.pool.put(p.queue.pop())
			}
			p.inflight = 0
			p.mu.Unlock()
			return
		case <-p.wake:
			timer.Stop()
		case <-timer.C:
		}
	}
}

// pktHeap is a binary min-heap of packets ordered by (due, seq).
type pktHeap []*packet

func (h pktHeap) less(i, j int) bool {
	if h[i].due.Equal(h[j].due) {
		return h[i].seq < h[j].seq
	}
	return h[i].due.Before(h[j].due)
}

func (h *pktHeap) push(pk *packet) {
	*h = append(*h, pk)
	q := *h
	for i := len(q) - 1; i > 0; {
		parent := (i - 1) / 2
		if !q.less(i, parent) {
			break
		}
		q[i], q[parent] = q[parent], q[i]
		i = parent
	}
}

func (h *pktHeap) pop() *packet {
	q := *h
	top := q[0]
	last := len(q) - 1
	q[0] = q[last]
	q[last] = nil
	q = q[:last]
	for i := 0; ; {
		small, l, r := i, 2*i+1, 2*i+2
		if l < len(q) && q.less(l, small) {
			small = l
		}
		if r < len(q) && q.less(r, small) {
			small = r
		}
		if small == i {
			break
		}
		q[i], q[small] = q[small], q[i]
		i = small
	}
	*h = q
	return top
}
