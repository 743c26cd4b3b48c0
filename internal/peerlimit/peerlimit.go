// Package peerlimit counts what each peer address holds at once
// (connections, requests in progress) and refuses more than a maximum. A
// peer is an IPv4 address or an IPv6 /64, one subscriber's usual
// allocation, so that a host cannot pass the limit by changing the low
// bits of its address.
package peerlimit

import (
	"net/netip"
	"sync"
)

// Key returns the key of addr's limit: the address itself for IPv4 (and
// IPv4-mapped IPv6), its /64 for IPv6, without zone.
func Key(addr netip.Addr) netip.Addr {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.WithZone("").Prefix(64)
		return p.Addr()
	}
	return addr
}

// Counter counts what each key holds, up to a maximum. It is safe for
// concurrent use; a key holding nothing takes no memory.
type Counter struct {
	max      int // per key; <= 0: no limit
	pressure int // in all; <= 0: none (see NewShared)

	mu    sync.Mutex
	held  map[netip.Addr]int32
	total int
}

// New returns a Counter allowing max at once per key; max <= 0 means no
// limit (Acquire always succeeds, and counts).
func New(max int) *Counter {
	return NewShared(max, 0)
}

// NewShared is New with a second limit for when a resource shared by all
// keys (a server's file descriptors) runs short: once pressure are held in
// all, a key may take one more only while it holds less than its fair
// share, pressure divided by the number of keys holding any (at least
// one). A few addresses that hold many connections then cannot take the
// last descriptors from peers that hold few. pressure <= 0 means no such
// limit.
func NewShared(max, pressure int) *Counter {
	return &Counter{max: max, pressure: pressure, held: make(map[netip.Addr]int32)}
}

// Acquire counts one more for key, or reports false (counting nothing) if
// key holds the maximum already, or its fair share under pressure.
func (c *Counter) Acquire(key netip.Addr) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := int(c.held[key])
	if c.max > 0 && n >= c.max {
		return false
	}
	if c.pressure > 0 && c.total >= c.pressure {
		keys := len(c.held)
		if n == 0 {
			keys++
		}
		if n >= max(1, c.pressure/keys) {
			return false
		}
	}
	c.held[key] = int32(n + 1)
	c.total++
	return true
}

// Release undoes one successful Acquire of key.
func (c *Counter) Release(key netip.Addr) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.held[key]
	if n <= 0 {
		return
	}
	c.total--
	if n > 1 {
		c.held[key] = n - 1
	} else {
		delete(c.held, key)
	}
}
