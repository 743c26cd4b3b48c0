//go:build !linux

package loadgen

import "net"

// bindLate does nothing outside Linux.
func bindLate(*net.Dialer) {}
