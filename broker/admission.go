package broker

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// Admission into net/http. Every connection a Listener returns passes
// through net/http before its proxy poll can be parked: a goroutine, a
// read and a write buffer, the request and the buffer a hijack makes,
// about 20 KiB that are garbage a moment later. When thousands of proxies
// arrive at once (a restart, a network coming back, polls that all end
// together and come back together), doing that for all of them at the same
// moment grows the heap and the stacks to the burst's size, and the runtime
// keeps much of that peak resident. Accept therefore lets at most
// maxAdmitted connections be between Accept and the moment their request
// starts waiting (parked, or waiting for a match in its handler) or their
// handler ends; the others wait in the kernel's accept queue, or in the
// listener's queue of handed-back connections, costing the broker nothing.
//
// A connection that holds its admission longer than admitLease (a slow or
// silent peer, a slow TLS handshake) stops counting, so that peers that
// connect and send nothing can delay the others by at most admitLease,
// never stop them: the timeouts of net/http still close them.
const (
	maxAdmitted = 32
	admitLease  = 20 * time.Millisecond
)

// admission counts the connections a listener has admitted into net/http
// that have not yet started waiting, oldest first.
type admission struct {
	mu         sync.Mutex
	head, tail *parkConn // admitted, in order of admission
	n          int
	released   chan struct{} // signalled when n falls below maxAdmitted
}

func newAdmission() *admission {
	return &admission{released: make(chan struct{}, 1)}
}

// admit waits until pc may enter net/http and records it, or returns
// false once done is closed.
func (a *admission) admit(pc *parkConn, done <-chan struct{}) bool {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		now := time.Now()
		a.mu.Lock()
		if a.n >= maxAdmitted && now.Sub(a.head.admittedAt) >= admitLease {
			a.unlink(a.head) // its lease is over
		}
		if a.n < maxAdmitted {
			pc.admittedAt = now
			pc.prevAdmitted, pc.nextAdmitted = a.tail, nil
			if a.tail != nil {
				a.tail.nextAdmitted = pc
			} else {
				a.head = pc
			}
			a.tail = pc
			pc.admitted = true
			a.n++
			a.mu.Unlock()
			return true
		}
		wait := admitLease - now.Sub(a.head.admittedAt)
		a.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(wait)
		} else {
			timer.Reset(wait)
		}
		select {
		case <-a.released:
		case <-timer.C:
		case <-done:
			return false
		}
	}
}

// release ends pc's admission, if it still holds one.
func (a *admission) release(pc *parkConn) {
	a.mu.Lock()
	if !pc.admitted {
		a.mu.Unlock()
		return
	}
	a.unlink(pc)
	a.mu.Unlock()
	select {
	case a.released <- struct{}{}:
	default:
	}
}

// unlink removes pc, which holds an admission; called with mu held.
func (a *admission) unlink(pc *parkConn) {
	if pc.prevAdmitted != nil {
		pc.prevAdmitted.nextAdmitted = pc.nextAdmitted
	} else {
		a.head = pc.nextAdmitted
	}
	if pc.nextAdmitted != nil {
		pc.nextAdmitted.prevAdmitted = pc.prevAdmitted
	} else {
		a.tail = pc.prevAdmitted
	}
	pc.prevAdmitted, pc.nextAdmitted = nil, nil
	pc.admitted = false
	a.n--
}

// releaseAdmission ends the admission of r's connection, if it came from
// a Listener: r's handler is about to wait or has ended.
func releaseAdmission(r *http.Request) {
	if la, ok := r.Context().Value(http.LocalAddrContextKey).(parkAddr); ok {
		la.pc.l.admission.release(la.pc)
	}
}

// parkConnOf returns the parkConn at the bottom of c, a connection a
// listener returned.
func parkConnOf(c net.Conn) *parkConn {
	if nc, ok := c.(interface{ NetConn() net.Conn }); ok {
		c = nc.NetConn()
	}
	pc, _ := c.(*parkConn)
	return pc
}
