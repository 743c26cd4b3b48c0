package netlab

import "errors"

var (
	// ErrInvalidConfig: a Config field has a value New cannot use.
	ErrInvalidConfig = errors.New("invalid netlab configuration")
	// ErrInvalidProfile: a path profile is out of range or does not parse.
	ErrInvalidProfile = errors.New("invalid path profile")
	// ErrClosed: the lab has been closed.
	ErrClosed = errors.New("netlab closed")
)
