//go:build !linux

package measure

import "net"

// BindLate does nothing outside Linux.
func BindLate(*net.Dialer) {}
