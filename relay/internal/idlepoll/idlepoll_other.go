//go:build !linux

package idlepoll

import (
	"errors"
	"time"
)

// Poller is a stub outside Linux: nothing parks.
type Poller[T any] struct{ t table[T] }

// New returns an error outside Linux.
func New[T any](ready func(T)) (*Poller[T], error) {
	return nil, errors.ErrUnsupported
}

// Park reports false: the caller keeps reading as before.
func (p *Poller[T]) Park(*Handle, T, time.Time) bool { return false }

// Close does nothing.
func (p *Poller[T]) Close() error { return nil }
