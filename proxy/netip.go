package proxy

import (
	"net"
	"net/netip"
)

func netipFromIP(ip net.IP) (netip.Addr, bool) {
	a, ok := netip.AddrFromSlice(ip)
	return a.Unmap(), ok
}
