// Package ratelimit limits requests per client address with token buckets
// (golang.org/x/time/rate) kept in a bounded least-recently-used table.
//
// IPv4 addresses are limited one by one; IPv6 addresses by their /64 prefix,
// since one host usually owns a whole /64. When the table is full the least
// recently seen address is forgotten: it starts again with a full bucket,
// which is what an idle address would have anyway.
package ratelimit

import (
	"net/netip"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Config configures a Limiter. The zero value limits nothing.
type Config struct {
	// Rate is the sustained number of requests per second allowed per
	// address. Zero or negative disables the limiter.
	Rate float64
	// Burst is the bucket size: how many requests an idle address may make
	// at once. Values below 1 mean 1.
	Burst int
	// MaxEntries bounds the table. Zero means DefaultMaxEntries.
	MaxEntries int
	// Now is a test seam for the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultMaxEntries is the default table size (about 200 bytes each).
const DefaultMaxEntries = 1 << 16

// Limiter is a per-address rate limiter, safe for concurrent use.
type Limiter struct {
	limit rate.Limit
	burst int
	max   int
	now   func() time.Time

	mu      sync.Mutex
	entries map[netip.Addr]*entry // guarded by mu
	lru     entry                 // sentinel of the LRU ring, most recent first; guarded by mu
}

type entry struct {
	key        netip.Addr
	bucket     *rate.Limiter
	prev, next *entry
}

// New returns a Limiter for cfg.
func New(cfg Config) *Limiter {
	l := &Limiter{
		limit: rate.Limit(cfg.Rate),
		burst: max(cfg.Burst, 1),
		max:   cfg.MaxEntries,
		now:   cfg.Now,
	}
	if l.max <= 0 {
		l.max = DefaultMaxEntries
	}
	if l.now == nil {
		l.now = time.Now
	}
	l.entries = make(map[netip.Addr]*entry)
	l.lru.prev, l.lru.next = &l.lru, &l.lru
	return l
}

// Enabled reports whether the limiter limits anything.
func (l *Limiter) Enabled() bool { return l != nil && l.limit > 0 }

// Allow reports whether a request from addr may proceed now, and takes a
// token if so. An invalid addr shares one bucket with every other invalid
// address.
func (l *Limiter) Allow(addr netip.Addr) bool {
	if !l.Enabled() {
		return true
	}
	addr = addr.Unmap()
	key := addr
	if addr.Is6() {
		key = netip.PrefixFrom(addr, 64).Masked().Addr()
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.entries[key]
	if e == nil {
		if len(l.entries) >= l.max {
			oldest := l.lru.prev
			l.unlink(oldest)
			delete(l.entries, oldest.key)
			e = oldest // reuse the evicted entry
			e.bucket = rate.NewLimiter(l.limit, l.burst)
		} else {
			e = &entry{bucket: rate.NewLimiter(l.limit, l.burst)}
		}
		e.key = key
		l.entries[key] = e
	} else {
		l.unlink(e)
	}
	l.pushFront(e)
	return e.bucket.AllowN(now, 1)
}

// Len returns the number of addresses in the table.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.entries)
}

func (l *Limiter) unlink(e *entry) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (l *Limiter) pushFront(e *entry) {
	e.next = l.lru.next
	e.prev = &l.lru
	l.lru.next.prev = e
	l.lru.next = e
}
