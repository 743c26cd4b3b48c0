package multipath

import (
	"sync"
	"time"
)

// deadline is a resettable read deadline: done returns a channel closed once
// the deadline has passed. A new deadline affects reads already waiting.
type deadline struct {
	mu    sync.Mutex
	timer *time.Timer   // guarded by mu
	gen   uint64        // guarded by mu; bumped on every change so stale timers do nothing
	ch    chan struct{} // guarded by mu; closed when the deadline has passed
}

func newDeadline() *deadline { return &deadline{ch: make(chan struct{})} }

// set sets the deadline to t; the zero time means none.
func (d *deadline) set(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	select {
	case <-d.ch:
		d.ch = make(chan struct{})
	default:
	}
	if t.IsZero() {
		return
	}
	dur := time.Until(t)
	if dur <= 0 {
		close(d.ch)
		return
	}
	gen, ch := d.gen, d.ch
	d.timer = time.AfterFunc(dur, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.gen == gen {
			close(ch)
		}
	})
}

func (d *deadline) done() <-chan struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ch
}

func (d *deadline) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

func (d *deadline) stopLocked() {
	if d.timer != nil {
		d.timer.Stop()
		d.timer = nil
	}
	d.gen++
}
