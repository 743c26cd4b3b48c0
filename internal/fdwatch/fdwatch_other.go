//go:build !linux

package fdwatch

import (
	"errors"
	"syscall"
)

// errUnsupported means this system has no watcher (not Linux).
var errUnsupported = errors.New("fdwatch: not supported on this system")

// Watcher watches sockets for readability; on this system it cannot be
// created.
type Watcher struct{}

// Watch is one socket registered with a Watcher.
type Watch struct{}

// New reports errUnsupported.
func New() (*Watcher, error) { return nil, errUnsupported }

// Close does nothing.
func (w *Watcher) Close() {}

// Add reports errUnsupported.
func (w *Watcher) Add(syscall.Conn, func()) (*Watch, error) { return nil, errUnsupported }

// Rearm reports errUnsupported.
func (wt *Watch) Rearm() error { return errUnsupported }

// Remove does nothing.
func (wt *Watch) Remove() {}

// ReadNow reports errUnsupported.
func (wt *Watch) ReadNow([]byte) (int, error) { return 0, errUnsupported }

// NewTokens reports errUnsupported.
func NewTokens(func(uint64), func()) (*Watcher, error) { return nil, errUnsupported }

// Arm reports errUnsupported.
func (w *Watcher) Arm(syscall.RawConn, uint64) error { return errUnsupported }
