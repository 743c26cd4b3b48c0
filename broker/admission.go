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
// that have not yet started waiting.
type admission struct {
	mu       sync.Mutex
	order    []admitted    // oldest first; includes some already released
	n        int           // admissions still held
	seq      uint64        // of the last admission
	released chan struct{} // signalled when an admission ends
}

// admitted is one admission: pc holds it while pc.admitSeq is seq.
type admitted struct {
	pc  *parkConn
	seq uint64
	at  time.Time
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
		a.expire(now)
		if a.n < maxAdmitted {
			a.seq++
			pc.admitSeq = a.seq
			a.order = append(a.order, admitted{pc, a.seq, now})
			a.n++
			a.mu.Unlock()
			return true
		}
		wait := admitLease - now.Sub(a.order[0].at) // the oldest lapses then
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

// expire drops the released admissions and those older than admitLease
// from the front of order, so that order[0], if any, is held and recent.
// Called with mu held.
func (a *admission) expire(now time.Time) {
	for len(a.order) > 0 {
		e := a.order[0]
		if e.pc.admitSeq == e.seq {
			if now.Sub(e.at) < admitLease {
				return
			}
			e.pc.admitSeq = 0 // its lease is over
			a.n--
		}
		a.order[0] = admitted{}
		a.order = a.order[1:]
	}
}

// release ends pc's admission, if it still holds one.
func (a *admission) release(pc *parkConn) {
	a.mu.Lock()
	if pc.admitSeq == 0 {
		a.mu.Unlock()
		return
	}
	pc.admitSeq = 0
	a.n--
	a.mu.Unlock()
	select {
	case a.released <- struct{}{}:
	default:
	}
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
