package idlepoll

import (
	"errors"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// maxEvents is how many readiness events one epoll_wait returns at most.
const maxEvents = 256

// Poller waits for parked connections. The zero value is not usable: call
// New.
type Poller[T any] struct {
	t      table[T]
	epfd   int
	stopfd int // an eventfd that stops the loop
	done   chan struct{}
	once   sync.Once
}

// New starts a Poller that calls ready(v) (from its own goroutine or from
// Wake's and Close's callers) for each connection it hands back.
func New[T any](ready func(T)) (*Poller[T], error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, err
	}
	// Key 0 is never a Handle's.
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stopfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(stopfd)
		return nil, err
	}
	p := &Poller[T]{
		t:      table[T]{ready: ready, parked: make(map[uint64]parked[T])},
		epfd:   epfd,
		stopfd: stopfd,
		done:   make(chan struct{}),
	}
	go p.loop()
	return p, nil
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
	// fires once; the next Park re-arms.
	ev := unix.EpollEvent{
		Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT,
		Fd:     int32(h.key),
		Pad:    int32(h.key >> 32),
	}
	var cerr error
	err := h.rc.Control(func(fd uintptr) {
		// Re-arm; the first time, add. (Nothing about h may change here:
		// once armed, v may already be someone else's.)
		cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, int(fd), &ev)
		if errors.Is(cerr, unix.ENOENT) {
			cerr = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev)
		}
	})
	if err == nil && cerr == nil {
		return true
	}
	// Not armed, so only Wake, the sweep or Close can have taken v back
	// meanwhile; if one did, v is theirs.
	_, ok := p.t.take(h.key)
	return !ok
}

func (p *Poller[T]) loop() {
	defer close(p.done)
	var events [maxEvents]unix.EpollEvent
	lastSweep := time.Now()
	for {
		n, err := unix.EpollWait(p.epfd, events[:], int(sweepInterval/time.Millisecond))
		if err != nil && !errors.Is(err, unix.EINTR) {
			// Cannot wait any more: give everything back to be read as
			// before.
			p.t.closeAll()
			return
		}
		for _, ev := range events[:max(n, 0)] {
			key := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if key == 0 {
				return
			}
			p.t.wake(key)
		}
		if now := time.Now(); now.Sub(lastSweep) >= sweepInterval {
			lastSweep = now
			p.t.expire(now)
		}
	}
}

// Close stops the Poller and hands every parked connection back; later
// Parks report false. It is idempotent.
func (p *Poller[T]) Close() error {
	p.once.Do(func() {
		var one = [8]byte{1}
		_, _ = unix.Write(p.stopfd, one[:])
		<-p.done
		p.t.closeAll()
		unix.Close(p.epfd)
		unix.Close(p.stopfd)
	})
	return nil
}
