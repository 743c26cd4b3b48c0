package childproc

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// sysProcAttr puts the child in its own process group (so that the
// terminal's Ctrl-C reaches only the supervisor, which then stops everything
// in order, and so that a whole group can be signalled) and has the kernel kill
// it should the supervisor die without cleaning up.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// groupAlive reports whether process group pgid has a member that is not a
// zombie. (kill(-pgid, 0) also counts zombies, which linger until their new
// parent, often a container's init, reaps them.)
func groupAlive(pgid int) bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH)
	}
	want := strconv.Itoa(pgid)
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue // gone meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold spaces and ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 3 && f[2] == want && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}
