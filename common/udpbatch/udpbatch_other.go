//go:build !linux

package udpbatch

import (
	"net"

	"github.com/pion/transport/v5"
)

// Wrap returns c unchanged: batched UDP I/O is Linux's.
func Wrap(c *net.UDPConn, _ *Buffers) transport.UDPConn { return c }
