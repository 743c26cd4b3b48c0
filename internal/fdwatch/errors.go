package fdwatch

import "errors"

// ErrClosed means the watcher was closed.
var ErrClosed = errors.New("fdwatch: watcher closed")
