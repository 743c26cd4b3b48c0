package proxy

import (
	"context"
	"sync"
	"sync/atomic"
)

// slots limits the number of clients served at once. A slot is taken
// before polling and held until the session it was polled for ends.
type slots struct {
	sem  chan struct{} // nil: unlimited
	held atomic.Int64
}

func newSlots(capacity int) *slots {
	s := &slots{}
	if capacity > 0 {
		s.sem = make(chan struct{}, capacity)
	}
	return s
}

// acquire blocks until a slot is free or ctx ends.
func (s *slots) acquire(ctx context.Context) (*slot, error) {
	if s.sem != nil {
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	s.held.Add(1)
	return &slot{s: s}, nil
}

// count is the number of slots held.
func (s *slots) count() int { return int(s.held.Load()) }

// slot is one held client slot; release is idempotent.
type slot struct {
	s    *slots
	once sync.Once
}

func (sl *slot) release() {
	sl.once.Do(func() {
		sl.s.held.Add(-1)
		if sl.s.sem != nil {
			<-sl.s.sem
		}
	})
}
