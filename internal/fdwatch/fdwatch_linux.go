package fdwatch

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// stopToken is the token of the watcher's own eventfd, which Close writes
// to stop the goroutine. Watches get tokens from 1 up.
const stopToken = 0

// maxEvents is how many events one epoll_wait returns at most.
const maxEvents = 256

// Watcher watches sockets for readability from one goroutine.
type Watcher struct {
	epfd, stopfd int

	mu      sync.Mutex
	watches map[uint64]*Watch // by token; guarded by mu
	last    uint64            // last token given; guarded by mu
	closed  bool              // guarded by mu
	done    chan struct{}     // closed when the goroutine has returned
}

// Watch is one socket registered with a Watcher.
type Watch struct {
	w     *Watcher
	rc    syscall.RawConn
	token uint64
	f     func()
}

// New starts a watcher and its goroutine. Close stops it.
func New() (*Watcher, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("fdwatch: epoll_create1: %w", err)
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("fdwatch: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setToken(&ev, stopToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stopfd, &ev); err != nil {
		unix.Close(stopfd)
		unix.Close(epfd)
		return nil, fmt.Errorf("fdwatch: epoll_ctl: %w", err)
	}
	w := &Watcher{epfd: epfd, stopfd: stopfd, watches: make(map[uint64]*Watch), done: make(chan struct{})}
	go w.run()
	return w, nil
}

// The token travels in epoll_event's 64-bit data, which x/sys/unix splits
// into Fd and Pad.
func setToken(ev *unix.EpollEvent, t uint64) {
	ev.Fd, ev.Pad = int32(uint32(t)), int32(uint32(t>>32))
}

func token(ev *unix.EpollEvent) uint64 {
	return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
}

// run waits for events until Close.
func (w *Watcher) run() {
	defer close(w.done)
	events := make([]unix.EpollEvent, maxEvents)
	for {
		n, err := unix.EpollWait(w.epfd, events, -1)
		if err != nil {
			if errors.Is(err, unix.EINTR) {
				continue
			}
			w.fail() // only with a bad epfd: a bug here
			return
		}
		for i := range events[:n] {
			t := token(&events[i])
			if t == stopToken {
				unix.Close(w.epfd)
				unix.Close(w.stopfd)
				return
			}
			w.mu.Lock()
			wt := w.watches[t]
			w.mu.Unlock()
			if wt != nil { // else removed since epoll_wait returned
				wt.f()
			}
		}
	}
}

// fail closes a watcher whose epoll instance no longer works and runs
// every watch's function once, so that each owner finds its watch gone
// (Rearm fails) instead of waiting for an event that will not come.
func (w *Watcher) fail() {
	w.mu.Lock()
	watches := w.watches
	w.closed = true
	w.watches = nil
	w.mu.Unlock()
	unix.Close(w.epfd)
	unix.Close(w.stopfd)
	for _, wt := range watches {
		wt.f()
	}
}

// Close stops the watcher's goroutine and waits for it. Watches still
// registered are forgotten, their connections left as they are. Close is
// idempotent.
func (w *Watcher) Close() {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		w.watches = nil
		one := [8]byte{1}
		_, _ = unix.Write(w.stopfd, one[:]) // an eventfd counter: cannot fail while open
	}
	w.mu.Unlock()
	<-w.done
}

// Add registers the socket of c (a *net.TCPConn or any syscall.Conn
// backed by a file descriptor) and arms it: f runs once, on the watcher's
// goroutine, when the socket is readable or has failed.
func (w *Watcher) Add(c syscall.Conn, f func()) (*Watch, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("fdwatch: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, ErrClosed
	}
	w.last++
	wt := &Watch{w: w, rc: rc, token: w.last, f: f}
	if err := wt.ctl(unix.EPOLL_CTL_ADD); err != nil {
		return nil, err
	}
	w.watches[wt.token] = wt
	return wt, nil
}

// ctl applies op to the watch's socket, armed one-shot for reading.
func (wt *Watch) ctl(op int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT}
	setToken(&ev, wt.token)
	var opErr error
	err := wt.rc.Control(func(fd uintptr) {
		opErr = unix.EpollCtl(wt.w.epfd, op, int(fd), &ev)
	})
	if err == nil {
		err = opErr
	}
	if err != nil {
		return fmt.Errorf("fdwatch: epoll_ctl: %w", err)
	}
	return nil
}

// Rearm arms the watch again after its function ran: it runs once more
// when the socket is readable, at once if it already is.
func (wt *Watch) Rearm() error {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	if wt.w.watches[wt.token] != wt {
		return ErrClosed
	}
	return wt.ctl(unix.EPOLL_CTL_MOD)
}

// Remove unregisters the watch: its function does not run again (unless it
// is running now). Call it before the connection is closed or used by
// anyone else.
func (wt *Watch) Remove() {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	if wt.w.watches[wt.token] != wt {
		return
	}
	delete(wt.w.watches, wt.token)
	// The connection may be closed already, which removed it from the set.
	_ = wt.ctl(unix.EPOLL_CTL_DEL)
}

// ReadNow reads what the socket holds into p without waiting: n > 0 with
// data, 0 and a nil error if there is nothing to read now, 0 and io.EOF
// when the peer has closed its side, or an error.
func (wt *Watch) ReadNow(p []byte) (n int, err error) {
	var rerr error
	err = wt.rc.Read(func(fd uintptr) bool {
		n, rerr = unix.Read(int(fd), p)
		return true // never wait in Go's poller
	})
	switch {
	case err != nil:
		return 0, err
	case errors.Is(rerr, unix.EAGAIN):
		return 0, nil
	case rerr != nil:
		return 0, rerr
	case n == 0 && len(p) > 0:
		return 0, io.EOF
	}
	return n, nil
}
