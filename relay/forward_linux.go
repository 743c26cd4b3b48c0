package relay

import "syscall"

// ipBindAddressNoPort is Linux's IP_BIND_ADDRESS_NO_PORT socket option.
const ipBindAddressNoPort = 24

// bindAddressNoPort sets IP_BIND_ADDRESS_NO_PORT, so that binding a source
// address (orport-srcaddr) does not reserve a port before connect: tor binds
// before it connects too, and both must share the port space.
func bindAddressNoPort(_, _ string, c syscall.RawConn) error {
	return c.Control(func(fd uintptr) {
		// Best effort: without the option the dial still works, it only
		// reserves a port earlier.
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
}
