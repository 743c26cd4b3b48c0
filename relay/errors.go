package relay

import "errors"

var (
	// ErrNoTarget is returned by New, wrapped in ErrInvalidConfig, when
	// the Config names no Dial function, Backends or ForwardAddr: the
	// relay would not know where streams go.
	ErrNoTarget = errors.New("no forwarding target (set Dial, Backends or ForwardAddr)")
	// ErrInvalidConfig is returned (wrapped) by New for a Config value out of
	// range.
	ErrInvalidConfig = errors.New("relay: invalid config")
	// ErrClosed is returned by Serve and Run after Close.
	ErrClosed = errors.New("relay: closed")
)
