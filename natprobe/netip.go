package natprobe

import (
	"net"
	"net/netip"
)

func addrFromIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}
