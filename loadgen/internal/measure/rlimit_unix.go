//go:build linux || darwin

package measure

import (
	"fmt"
	"syscall"
)

// RaiseFileLimit makes sure the soft RLIMIT_NOFILE is at least need,
// raising the hard limit too when the process may (root). It returns the
// resulting soft limit.
func RaiseFileLimit(need uint64) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, fmt.Errorf("%w: getrlimit: %w", errFileLimit, err)
	}
	if rl.Cur >= need {
		return rl.Cur, nil
	}
	want := rl
	want.Cur = need
	if want.Max < need {
		want.Max = need
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
		return need, nil
	}
	// Not allowed to raise the hard limit: take what there is.
	rl.Cur = rl.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	return rl.Cur, fmt.Errorf("%w: need %d file descriptors, hard limit is %d (raise it with ulimit -Hn or as root)", errFileLimit, need, rl.Max)
}
