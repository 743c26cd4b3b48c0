package netaccept

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestTemporary(t *testing.T) {
	opErr := func(errno syscall.Errno) error {
		return &net.OpError{Op: "accept", Net: "tcp", Err: os.NewSyscallError("accept4", errno)}
	}
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{opErr(syscall.EMFILE), true},
		{opErr(syscall.ENFILE), true},
		{opErr(syscall.ECONNABORTED), true},
		{opErr(syscall.ENOMEM), true},
		{fmt.Errorf("wrapped: %w", opErr(syscall.EINTR)), true},
		{&net.OpError{Op: "accept", Err: os.ErrDeadlineExceeded}, true},
		{opErr(syscall.EBADF), false},
		{opErr(syscall.EINVAL), false},
		{net.ErrClosed, false},
		{errors.New("something else"), false},
	} {
		if got := Temporary(tt.err); got != tt.want {
			t.Errorf("Temporary(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestBackoff: the pause doubles from MinBackoff to MaxBackoff, starts
// over after Reset and ends early with its context.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Backoff
		if b.Failing() {
			t.Fatal("the zero Backoff is failing")
		}
		want := []time.Duration{5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000}
		for i, w := range want {
			start := time.Now()
			if !b.Wait(context.Background()) {
				t.Fatal("Wait returned false")
			}
			if got := time.Since(start); got != w*time.Millisecond {
				t.Errorf("pause %d = %v, want %v", i, got, w*time.Millisecond)
			}
		}
		if !b.Failing() {
			t.Error("not failing after failures")
		}
		b.Reset()
		start := time.Now()
		b.Wait(context.Background())
		if got := time.Since(start); got != MinBackoff || b.Failing() != true {
			t.Errorf("pause after Reset = %v, want %v", got, MinBackoff)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if b.Wait(ctx) {
			t.Error("Wait with an ended context returned true")
		}
	})
}
