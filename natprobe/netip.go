package natprobe

import (
	"net"
	"net/netip"
)

func addrFromIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// peerPrefix is the key of a peer's per-address limit: its IPv4 address,
// or the /64 of its IPv6 address (one subscriber's usual allocation). An
// address that does not parse (never from net/http) shares one key.
func peerPrefix(remoteAddr string) netip.Prefix {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.WithZone("").Prefix(64)
	return p
}
