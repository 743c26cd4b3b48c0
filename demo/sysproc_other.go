//go:build unix && !linux

package demo

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the child in its own process group, so that the demo's
// terminal's Ctrl-C reaches only the demo and a whole group can be
// signalled.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// GroupAlive reports whether process group pgid has a member (zombies
// included).
func GroupAlive(pgid int) bool {
	return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
}
