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
// to stop the goroutine. Watches get tokens from 1 up, and so must the
// callers of Arm.
const stopToken = 0

// maxEvents is how many events one epoll_wait returns at most.
const maxEvents = 256

// Watcher watches sockets for readability from one goroutine.
type Watcher struct {
	epfd, stopfd int
	fire         func(token uint64) // on the goroutine, for each readable socket
	failed       func()             // on the goroutine, if epoll_wait fails

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

// New starts a watcher and its goroutine, for sockets registered with Add.
// Close stops it.
func New() (*Watcher, error) {
	w := &Watcher{watches: make(map[uint64]*Watch)}
	return w, w.start(w.fireWatch, w.failWatches)
}

// NewTokens starts a watcher for callers that keep their own table of
// sockets (and so need no Watch each): they register a socket with Arm
// under a token of theirs, and fire(token) runs once on the watcher's
// goroutine when it is readable or has failed. If epoll_wait fails the
// watcher closes and failed runs instead, once. Close stops it.
func NewTokens(fire func(token uint64), failed func()) (*Watcher, error) {
	w := &Watcher{}
	return w, w.start(fire, failed)
}

// start opens the epoll instance and starts the goroutine.
func (w *Watcher) start(fire func(uint64), failed func()) error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("fdwatch: epoll_create1: %w", err)
	}
	stopfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return fmt.Errorf("fdwatch: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN}
	setToken(&ev, stopToken)
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, stopfd, &ev); err != nil {
		unix.Close(stopfd)
		unix.Close(epfd)
		return fmt.Errorf("fdwatch: epoll_ctl: %w", err)
	}
	w.epfd, w.stopfd, w.fire, w.failed = epfd, stopfd, fire, failed
	w.done = make(chan struct{})
	go w.run()
	return nil
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
			// Only with a bad epfd: a bug here.
			w.mu.Lock()
			w.closed = true
			w.mu.Unlock()
			unix.Close(w.epfd)
			unix.Close(w.stopfd)
			w.failed()
			return
		}
		for i := range events[:n] {
			t := token(&events[i])
			if t == stopToken {
				unix.Close(w.epfd)
				unix.Close(w.stopfd)
				return
			}
			w.fire(t)
		}
	}
}

// fireWatch runs the function of the watch with token t.
func (w *Watcher) fireWatch(t uint64) {
	w.mu.Lock()
	wt := w.watches[t]
	w.mu.Unlock()
	if wt != nil { // else removed since epoll_wait returned
		wt.f()
	}
}

// failWatches runs every watch's function once when the epoll instance no
// longer works, so that each owner finds its watch gone (Rearm fails)
// instead of waiting for an event that will not come.
func (w *Watcher) failWatches() {
	w.mu.Lock()
	watches := w.watches
	w.watches = nil
	w.mu.Unlock()
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
	if err := w.ctl(rc, unix.EPOLL_CTL_ADD, wt.token); err != nil {
		return nil, err
	}
	w.watches[wt.token] = wt
	return wt, nil
}

// Arm registers rc's socket under token (not 0), or arms it again, for a
// watcher made by NewTokens: fire(token) runs once when the socket is
// readable or has failed, at once if it already is. The socket stays
// registered, disarmed, until it is closed.
func (w *Watcher) Arm(rc syscall.RawConn, token uint64) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return ErrClosed
	}
	err := w.ctl(rc, unix.EPOLL_CTL_MOD, token)
	if errors.Is(err, unix.ENOENT) {
		err = w.ctl(rc, unix.EPOLL_CTL_ADD, token)
	}
	return err
}

// ctl applies op to rc's socket, armed one-shot for reading under token.
// The caller holds w.mu and has checked that w is not closed.
func (w *Watcher) ctl(rc syscall.RawConn, op int, token uint64) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT}
	setToken(&ev, token)
	var opErr error
	err := rc.Control(func(fd uintptr) {
		opErr = unix.EpollCtl(w.epfd, op, int(fd), &ev)
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
	if wt.w.closed || wt.w.watches[wt.token] != wt {
		return ErrClosed
	}
	return wt.w.ctl(wt.rc, unix.EPOLL_CTL_MOD, wt.token)
}

// Remove unregisters the watch: its function does not run again (unless it
// is running now). Call it before the connection is closed or used by
// anyone else.
func (wt *Watch) Remove() {
	wt.w.mu.Lock()
	defer wt.w.mu.Unlock()
	if wt.w.closed || wt.w.watches[wt.token] != wt {
		return
	}
	delete(wt.w.watches, wt.token)
	// The connection may be closed already, which removed it from the set.
	_ = wt.w.ctl(wt.rc, unix.EPOLL_CTL_DEL, wt.token)
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
