//go:build !linux

package relay

import "syscall"

// bindAddressNoPort does nothing outside Linux.
func bindAddressNoPort(_, _ string, _ syscall.RawConn) error { return nil }
