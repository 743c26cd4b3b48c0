package natprobe

import "errors"

var (
	// ErrInvalidConfig: a Config field has a value New cannot use.
	ErrInvalidConfig = errors.New("invalid natprobe configuration")
	// ErrClosed: the server has been closed.
	ErrClosed = errors.New("natprobe server closed")
)
