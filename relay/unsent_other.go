//go:build !linux

package relay

import "net"

// limitUnsent does nothing outside Linux.
func limitUnsent(net.Conn) {}
