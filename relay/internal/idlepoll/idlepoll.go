package idlepoll

import (
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/internal/fdwatch"
)

// sweepInterval is how often parked connections are checked against their
// deadlines.
const sweepInterval = time.Second

// A Handle is one connection's registration; keep one per connection, made
// by NewHandle, and use it with one Poller.
type Handle struct {
	rc  syscall.RawConn
	key uint64 // the connection's fdwatch token
}

// keys numbers Handles from 1 (fdwatch's tokens), so that an event never
// reaches a connection that merely reuses a closed one's file descriptor.
var keys atomic.Uint64

// NewHandle returns a Handle for the socket behind rc.
func NewHandle(rc syscall.RawConn) *Handle {
	return &Handle{rc: rc, key: keys.Add(1)}
}

// parked is one parked connection. Its deadline is kept as the time since
// the table's epoch: a third of a time.Time's size, and monotonic.
type parked[T any] struct {
	v   T
	due time.Duration
}

// table holds the parked connections and knows who gets them back.
type table[T any] struct {
	ready func(T)   // called without the lock, from any goroutine
	epoch time.Time // parked deadlines count from here

	mu     sync.Mutex
	parked map[uint64]parked[T] // by Handle key; guarded by mu
	closed bool                 // guarded by mu
}

// add records v as parked under key; it reports false once closed.
func (t *table[T]) add(key uint64, v T, deadline time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return false
	}
	t.parked[key] = parked[T]{v: v, due: deadline.Sub(t.epoch)}
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
	elapsed := now.Sub(t.epoch)
	t.mu.Lock()
	for k, p := range t.parked {
		if p.due <= elapsed {
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

// Poller waits for parked connections. The zero value is not usable: call
// New.
type Poller[T any] struct {
	t    table[T]
	w    *fdwatch.Watcher
	stop chan struct{} // closed by Close: the sweep ends
	done chan struct{} // closed when the sweep has ended
	once sync.Once
}

// New starts a Poller that calls ready(v) (from its own goroutines or from
// Wake's and Close's callers) for each connection it hands back.
func New[T any](ready func(T)) (*Poller[T], error) {
	p := &Poller[T]{
		t:    table[T]{ready: ready, epoch: time.Now(), parked: make(map[uint64]parked[T])},
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	// The parked table is the watcher's only table: a parked connection
	// costs one map entry. If epoll_wait fails, everything is handed back
	// to be read as before.
	w, err := fdwatch.NewTokens(p.t.wake, p.t.closeAll)
	if err != nil {
		return nil, err
	}
	p.w = w
	go p.sweep()
	return p, nil
}

// sweep hands back the connections whose deadlines have passed, once every
// sweepInterval: one ticker for all of them costs nothing per connection,
// where a time.AfterFunc each would cost about 136 B.
func (p *Poller[T]) sweep() {
	defer close(p.done)
	tick := time.NewTicker(sweepInterval)
	defer tick.Stop()
	for {
		select {
		case now := <-tick.C:
			p.t.expire(now)
		case <-p.stop:
			return
		}
	}
}

// Park parks v, whose socket is h's, until it is readable (or has hung up)
// or deadline passes. The caller gives up v if Park reports true: it comes
// back through ready, possibly before Park returns. Park reports false if
// the Poller is closed or the socket cannot be watched; the caller keeps v.
func (p *Poller[T]) Park(h *Handle, v T, deadline time.Time) bool {
	if !p.t.add(h.key, v, deadline) {
		return false
	}
	// Level-triggered and one-shot: readable data present now or later
	// fires once; the next Park re-arms. (Nothing about h may change
	// after this: once armed, v may already be someone else's.)
	if p.w.Arm(h.rc, h.key) == nil {
		return true
	}
	// Not armed, so only Wake, the sweep or Close can have taken v back
	// meanwhile; if one did, v is theirs.
	_, ok := p.t.take(h.key)
	return !ok
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

// Close stops the Poller and hands every parked connection back; later
// Parks report false. It is idempotent.
func (p *Poller[T]) Close() error {
	p.once.Do(func() {
		close(p.stop)
		<-p.done
		p.w.Close()
		p.t.closeAll()
	})
	return nil
}
