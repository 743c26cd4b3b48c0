//go:build unix && !linux

package childproc

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that the
// terminal's Ctrl-C reaches only the supervisor and a whole group can be
// signalled.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// groupAlive reports whether process group pgid has a member (zombies
// included).
func groupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
