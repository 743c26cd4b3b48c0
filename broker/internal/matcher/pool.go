package matcher

// pool holds the waiting proxies of one NAT pool, grouped into classes by
// acceptance mask. All of it is guarded by Matcher.mu.
type pool struct {
	classes []*class          // classes with at least one waiting proxy
	byMask  map[uint64]*class // every class kept, listed or not
	waiting int               // total waiting proxies
}

// keptEmptyClasses is how many empty classes a pool keeps for reuse before
// it starts deleting classes as they empty (bounds memory under proxies that
// send many distinct patterns).
const keptEmptyClasses = 16

// class is a min-heap of waiting proxies with the same acceptance mask.
type class struct {
	mask uint64
	heap []*Proxy
	slot int // index in pool.classes, or -1 when empty and unlisted
}

// before reports whether a should be matched before b: fewer strikes first
// (capped at MaxStrikes), then fewer clients, then the earlier arrival.
func before(a, b *Proxy) bool {
	if a.penalty != b.penalty {
		return a.penalty < b.penalty
	}
	if a.Clients != b.Clients {
		return a.Clients < b.Clients
	}
	return a.seq < b.seq
}

// push adds p; it reports whether a class was listed (see accepts).
func (pl *pool) push(p *Proxy) bool {
	c := pl.byMask[p.Accepts]
	if c == nil {
		if pl.byMask == nil {
			pl.byMask = make(map[uint64]*class)
		}
		c = &class{mask: p.Accepts, slot: -1}
		pl.byMask[p.Accepts] = c
	}
	listed := c.slot < 0
	if listed {
		c.slot = len(pl.classes)
		pl.classes = append(pl.classes, c)
	}
	p.cls = c
	p.index = len(c.heap)
	c.heap = append(c.heap, p)
	c.up(p.index)
	pl.waiting++
	return listed
}

// accepts returns the union of the masks of the classes with a waiting proxy.
func (pl *pool) accepts() uint64 {
	var mask uint64
	for _, c := range pl.classes {
		mask |= c.mask
	}
	return mask
}

// best returns, without removing it, the best proxy among the classes whose
// mask has bit, or nil.
func (pl *pool) best(bit uint64) *Proxy {
	var best *Proxy
	for _, c := range pl.classes {
		if c.mask&bit != 0 && (best == nil || before(c.heap[0], best)) {
			best = c.heap[0]
		}
	}
	return best
}

// remove takes p out of its class heap; it reports whether its class was
// unlisted (see accepts).
func (pl *pool) remove(p *Proxy) bool {
	c := p.cls
	c.removeAt(p.index)
	p.cls = nil
	p.index = -1
	pl.waiting--
	if len(c.heap) > 0 {
		return false
	}
	// Unlist the empty class: swap it with the last listed one.
	last := len(pl.classes) - 1
	moved := pl.classes[last]
	pl.classes[c.slot] = moved
	moved.slot = c.slot
	pl.classes[last] = nil
	pl.classes = pl.classes[:last]
	c.slot = -1
	if len(pl.byMask) > keptEmptyClasses {
		delete(pl.byMask, c.mask)
	}
	return true
}

func (c *class) removeAt(i int) {
	h := c.heap
	last := len(h) - 1
	if i != last {
		h[i] = h[last]
		h[i].index = i
	}
	h[last] = nil
	c.heap = h[:last]
	if i != last {
		c.down(i)
		c.up(i)
	}
	// Give back memory after a burst: never keep more than four times
	// what is in use once the heap is large.
	if cap(c.heap) > 1024 && len(c.heap) < cap(c.heap)/4 {
		c.heap = append(make([]*Proxy, 0, cap(c.heap)/2), c.heap...)
	}
}

func (c *class) up(i int) {
	h := c.heap
	for i > 0 {
		parent := (i - 1) / 2
		if !before(h[i], h[parent]) {
			break
		}
		h[i], h[parent] = h[parent], h[i]
		h[i].index = i
		h[parent].index = parent
		i = parent
	}
}

func (c *class) down(i int) {
	h := c.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && before(h[r], h[l]) {
			m = r
		}
		if !before(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		h[i].index = i
		h[m].index = m
		i = m
	}
}
