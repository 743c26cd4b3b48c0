package measure

import (
	"net"
	"syscall"
)

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT (Linux 4.2).
const ipBindAddressNoPort = 24

// BindLate makes d, which binds a local address, pick the local port at
// connect time: many short connections from one address then reuse ports
// that wait in TIME_WAIT towards other destinations and, on loopback,
// towards the same one, instead of running out.
func BindLate(d *net.Dialer) {
	prev := d.Control
	d.Control = func(network, address string, c syscall.RawConn) error {
		if prev != nil {
			if err := prev(network, address, c); err != nil {
				return err
			}
		}
		var serr error
		err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
		})
		if err != nil {
			return err
		}
		return serr
	}
}
