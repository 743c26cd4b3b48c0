package netaccept

import (
	"context"
	"errors"
	"net"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
)

// The pause after failed Accepts: MinBackoff after the first, doubling up
// to MaxBackoff.
const (
	MinBackoff = 5 * time.Millisecond
	MaxBackoff = time.Second
)

// Temporary reports whether an Accept error may go away by itself, so that
// accepting should be retried.
func Temporary(err error) bool {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		switch errno {
		case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
			syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EPROTO,
			syscall.EINTR, syscall.EAGAIN, syscall.ETIMEDOUT:
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Backoff is the pause of one accept loop after failed Accepts. The zero
// value is ready.
type Backoff struct {
	d time.Duration // the last pause; 0 outside a run of failures
}

// Wait pauses after a failed Accept, longer with each failure in a row;
// it reports false if ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool {
	b.d = min(max(2*b.d, MinBackoff), MaxBackoff)
	return sleep.For(ctx, b.d)
}

// Failing reports whether the loop is in a run of failures.
func (b *Backoff) Failing() bool { return b.d != 0 }

// Reset ends a run of failures after an Accept that worked.
func (b *Backoff) Reset() { b.d = 0 }
