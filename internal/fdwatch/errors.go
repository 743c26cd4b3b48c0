package fdwatch

import "errors"

var (
	// ErrUnsupported means this system has no watcher (not Linux).
	ErrUnsupported = errors.New("fdwatch: not supported on this system")
	// ErrClosed means the watcher was closed.
	ErrClosed = errors.New("fdwatch: watcher closed")
)
