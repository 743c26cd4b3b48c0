package idlepoll

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// sweepInterval is how often parked connections are checked against their
// deadlines.
const sweepInterval = time.Second

// A Handle is one connection's registration; keep one per connection, made
// by NewHandle, and use it with one Poller.
type Handle struct {
	rc  syscall.RawConn
	key uint64
}

// keys numbers Handles, so that an event never reaches a connection that
// merely reuses a closed one's file descriptor.
var keys atomic.Uint64

// NewHandle returns a Handle for the socket behind rc.
func NewHandle(rc syscall.RawConn) *Handle {
	return &Handle{rc: rc, key: keys.Add(1)}
}

// parked is one parked connection.
type parked[T any] struct {
	v        T
	deadline time.Time
}

// table is the platform-independent part of a Poller: the parked
// connections and who gets them back.
type table[T any] struct {
	ready func(T) // called without the lock, from any goroutine

	mu     sync.Mutex
	parked map[uint64]parked[T] // guarded by mu
	closed bool                 // guarded by mu
}

// add records v as parked under key; it reports false once closed.
func (t *table[T]) add(key uint64, v T, deadline time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.parked[key] = parked[T]{v: v, deadline: deadline}
	return true
}

// take removes key and reports whether it was parked.
func (t *table[T]) take(key uint64) (T, bool) {
	t.mu.Lock()
	p, ok := t.parked[key]
	delete(t.parked, key)
	t.mu.Unlock()
	return p.v, ok
}

// wake hands key's connection back if it is parked.
func (t *table[T]) wake(key uint64) {
	if v, ok := t.take(key); ok {
		t.ready(v)
	}
}

// expire hands back every connection whose deadline has passed.
func (t *table[T]) expire(now time.Time) {
	var due []T
	t.mu.Lock()
	for k, p := range t.parked {
		if !now.Before(p.deadline) {
			due = append(due, p.v)
			delete(t.parked, k)
		}
	}
	t.mu.Unlock()
	for _, v := range due {
		t.ready(v)
	}
}

// closeAll refuses further parking and hands every parked connection back.
func (t *table[T]) closeAll() {
	t.mu.Lock()
	t.closed = true
	all := t.parked
	t.parked = nil
	t.mu.Unlock()
	for _, p := range all {
		t.ready(p.v)
	}
}

// Len returns the number of parked connections.
func (p *Poller[T]) Len() int {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	return len(p.t.parked)
}

// Wake hands h's connection back now if it is parked (for example because
// another goroutine closed it).
func (p *Poller[T]) Wake(h *Handle) { p.t.wake(h.key) }
