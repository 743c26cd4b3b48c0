package idlepoll

import (
	"sync"
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
	rc syscall.RawConn
}

// NewHandle returns a Handle for the socket behind rc.
func NewHandle(rc syscall.RawConn) *Handle {
	return &Handle{rc: rc}
}

// SyscallConn returns the socket, so that fdwatch can watch a Handle
// without asking the connection for it again at every Park.
func (h *Handle) SyscallConn() (syscall.RawConn, error) { return h.rc, nil }

// parked is one parked connection. Its deadline is kept as the time since
// the table's epoch: a third of a time.Time's size, and monotonic.
type parked[T any] struct {
	v     T
	due   time.Duration
	watch *fdwatch.Watch
}

// table holds the parked connections and knows who gets them back.
type table[T any] struct {
	ready func(T)   // called without the lock, from any goroutine
	epoch time.Time // parked deadlines count from here

	mu     sync.Mutex
	parked map[*Handle]parked[T] // guarded by mu
	closed bool                  // guarded by mu
}

// giveBack unregisters p's socket and hands p back; the caller has taken p
// out of the table.
func (t *table[T]) giveBack(p parked[T]) {
	p.watch.Remove()
	t.ready(p.v)
}

// wake hands h's connection back if it is parked.
func (t *table[T]) wake(h *Handle) {
	t.mu.Lock()
	p, ok := t.parked[h]
	delete(t.parked, h)
	t.mu.Unlock()
	if ok {
		t.giveBack(p)
	}
}

// expire hands back every connection whose deadline has passed.
func (t *table[T]) expire(now time.Time) {
	var due []parked[T]
	elapsed := now.Sub(t.epoch)
	t.mu.Lock()
	for h, p := range t.parked {
		if p.due <= elapsed {
			due = append(due, p)
			delete(t.parked, h)
		}
	}
	t.mu.Unlock()
	for _, p := range due {
		t.giveBack(p)
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
		t.giveBack(p)
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
	w, err := fdwatch.New()
	if err != nil {
		return nil, err
	}
	p := &Poller[T]{
		t:    table[T]{ready: ready, epoch: time.Now(), parked: make(map[*Handle]parked[T])},
		w:    w,
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	go p.sweep()
	return p, nil
}

// sweep hands back the connections whose deadlines have passed, once every
// sweepInterval: one ticker for all of them costs less memory than a timer
// each.
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
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	if p.t.closed {
		return false
	}
	// Added under the lock, so that the watch's function (which takes the
	// lock) finds the entry with its watch. If fdwatch has failed, Add
	// reports ErrClosed after fdwatch has handed back every parked
	// connection.
	wt, err := p.w.Add(h, func() { p.t.wake(h) })
	if err != nil {
		return false
	}
	p.t.parked[h] = parked[T]{v: v, due: deadline.Sub(p.t.epoch), watch: wt}
	return true
}

// Len returns the number of parked connections.
func (p *Poller[T]) Len() int {
	p.t.mu.Lock()
	defer p.t.mu.Unlock()
	return len(p.t.parked)
}

// Wake hands h's connection back now if it is parked (for example because
// another goroutine closed it).
func (p *Poller[T]) Wake(h *Handle) { p.t.wake(h) }

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
