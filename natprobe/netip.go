package natprobe

import (
	"net"
	"net/netip"

	"github.com/flurrypt/flurry/internal/peerlimit"
)

func addrFromIP(ip net.IP) netip.Addr {
	a, _ := netip.AddrFromSlice(ip)
	return a.Unmap()
}

// peerOf is the key of a peer's per-address limit (peerlimit.Key): its
// IPv4 address, or its IPv6 /64. An address that does not parse (never
// from net/http) shares the zero key.
func peerOf(remoteAddr string) netip.Addr {
	ap, err := netip.ParseAddrPort(remoteAddr)
	if err != nil {
		return netip.Addr{}
	}
	return peerlimit.Key(ap.Addr())
}
