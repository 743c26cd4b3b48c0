//go:build !linux

package fdwatch

import "syscall"

// Watcher watches sockets for readability; on this system it cannot be
// created.
type Watcher struct{}

// Watch is one socket registered with a Watcher.
type Watch struct{}

// New reports ErrUnsupported.
func New() (*Watcher, error) { return nil, ErrUnsupported }

// Close does nothing.
func (w *Watcher) Close() {}

// Add reports ErrUnsupported.
func (w *Watcher) Add(syscall.Conn, func()) (*Watch, error) { return nil, ErrUnsupported }

// Rearm reports ErrUnsupported.
func (wt *Watch) Rearm() error { return ErrUnsupported }

// Remove does nothing.
func (wt *Watch) Remove() {}

// ReadNow reports ErrUnsupported.
func (wt *Watch) ReadNow([]byte) (int, error) { return 0, ErrUnsupported }

// NewTokens reports ErrUnsupported.
func NewTokens(func(uint64), func()) (*Watcher, error) { return nil, ErrUnsupported }

// Arm reports ErrUnsupported.
func (w *Watcher) Arm(syscall.RawConn, uint64) error { return ErrUnsupported }
