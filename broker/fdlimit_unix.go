//go:build unix

package broker

import "syscall"

// fileLimit returns the process's limit on open files (the soft limit,
// which the Go runtime raises to the hard one at start), or 0 if unknown.
func fileLimit() int {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil || r.Cur > 1<<30 {
		return 0
	}
	return int(r.Cur)
}
