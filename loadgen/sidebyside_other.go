//go:build !linux

package loadgen

import "syscall"

// childProcAttr: without Linux's parent-death signal, the chain's processes
// are stopped only by RunSideBySide itself.
func childProcAttr() *syscall.SysProcAttr { return nil }
