package loadgen

import "syscall"

// childProcAttr makes a chain's process die with the load generator.
func childProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
