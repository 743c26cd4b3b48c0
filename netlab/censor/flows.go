package censor

import "time"

// flowTable remembers a T per flow, for at most max flows and idle time
// each; when full, the least recently used flow is forgotten. Lookups of
// flows it holds do not allocate; a new flow reuses an evicted entry when
// there is one.
type flowTable[T any] struct {
	max   int
	idle  time.Duration
	m     map[flowKey]*flowEntry[T]
	head  flowEntry[T] // sentinel: head.next is the most recently used
	spare *flowEntry[T]
}

type flowEntry[T any] struct {
	key        flowKey
	last       time.Time
	val        T
	prev, next *flowEntry[T]
}

func newFlowTable[T any](max int, idle time.Duration) *flowTable[T] {
	t := &flowTable[T]{max: max, idle: idle, m: make(map[flowKey]*flowEntry[T])}
	t.head.prev, t.head.next = &t.head, &t.head
	return t
}

// get returns k's state, or nil if k is not held or has been idle too long.
// It marks k used at now.
func (t *flowTable[T]) get(now time.Time, k flowKey) *T {
	e := t.m[k]
	if e == nil {
		return nil
	}
	if now.Sub(e.last) > t.idle {
		t.remove(e)
		return nil
	}
	e.last = now
	t.unlink(e)
	t.pushFront(e)
	return &e.val
}

// put starts tracking k with a zero T (replacing any state it had) and
// returns that state.
func (t *flowTable[T]) put(now time.Time, k flowKey) *T {
	if e := t.m[k]; e != nil {
		t.remove(e)
	}
	for len(t.m) >= t.max && t.head.prev != &t.head {
		t.remove(t.head.prev)
	}
	e := t.spare
	if e != nil {
		t.spare = nil
		*e = flowEntry[T]{}
	} else {
		e = new(flowEntry[T])
	}
	e.key, e.last = k, now
	t.m[k] = e
	t.pushFront(e)
	return &e.val
}

func (t *flowTable[T]) remove(e *flowEntry[T]) {
	delete(t.m, e.key)
	t.unlink(e)
	t.spare = e
}

func (t *flowTable[T]) unlink(e *flowEntry[T]) {
	e.prev.next = e.next
	e.next.prev = e.prev
	e.prev, e.next = nil, nil
}

func (t *flowTable[T]) pushFront(e *flowEntry[T]) {
	e.prev = &t.head
	e.next = t.head.next
	t.head.next.prev = e
	t.head.next = e
}
