package proxy

import (
	"net/netip"

	"github.com/flurrypt/flurry/common/sdp"
)

// The relay address policy refuses every address that IANA's
// special-purpose registries mark not globally reachable, on top of
// common/sdp.IsLocal (loopback, private, link-local, CGNAT, multicast):
//
//	https://www.iana.org/assignments/iana-ipv4-special-registry/
//	https://www.iana.org/assignments/iana-ipv6-special-registry/
//
// Entries the registries mark globally reachable (AS112, AMT, the PCP and
// TURN anycast addresses, ORCHIDv2, drone remote ID) stay allowed. Two
// IPv6 prefixes embed an IPv4 address that decides instead: the NAT64
// well-known prefix 64:ff9b::/96 (RFC 6052; 64:ff9b::7f00:1 is 127.0.0.1
// through a NAT64 gateway) and 6to4's 2002::/16 (RFC 3056). Outside
// 2000::/3, IPv6 has no global unicast space at all.

// notGlobalV4 lists the IPv4 special-purpose blocks that are not globally
// reachable and that sdp.IsLocal does not already cover.
var notGlobalV4 = prefixes(
	"192.0.0.0/24",    // IETF protocol assignments (RFC 6890), DS-Lite, NAT64 discovery
	"192.0.2.0/24",    // documentation, TEST-NET-1 (RFC 5737)
	"192.88.99.0/24",  // deprecated 6to4 relay anycast (RFC 7526)
	"198.18.0.0/15",   // benchmarking (RFC 2544)
	"198.51.100.0/24", // documentation, TEST-NET-2
	"203.0.113.0/24",  // documentation, TEST-NET-3
	"240.0.0.0/4",     // reserved (RFC 1112), limited broadcast included
)

// globalV4 lists the globally reachable exceptions inside notGlobalV4.
var globalV4 = prefixes(
	"192.0.0.9/32",  // Port Control Protocol anycast (RFC 7723)
	"192.0.0.10/32", // TURN anycast (RFC 8155)
)

// global6 is IPv6's global unicast space.
var global6 = netip.MustParsePrefix("2000::/3")

// notGlobalV6 lists the IPv6 special-purpose blocks inside 2000::/3 that
// are not globally reachable.
var notGlobalV6 = prefixes(
	"2001::/23",     // IETF protocol assignments (RFC 2928), Teredo and benchmarking included
	"2001:db8::/32", // documentation (RFC 3849)
	"3fff::/20",     // documentation (RFC 9637)
)

// globalV6 lists the globally reachable exceptions inside notGlobalV6.
var globalV6 = prefixes(
	"2001:1::1/128",   // Port Control Protocol anycast (RFC 7723)
	"2001:1::2/128",   // TURN anycast (RFC 8155)
	"2001:1::3/128",   // DNS-SD service registration protocol anycast (RFC 9665)
	"2001:3::/32",     // AMT (RFC 7450)
	"2001:4:112::/48", // AS112-v6 (RFC 7535)
	"2001:20::/28",    // ORCHIDv2 (RFC 7343)
	"2001:30::/28",    // drone remote ID protocol entity tags (RFC 9374)
)

var (
	nat64  = netip.MustParsePrefix("64:ff9b::/96")
	sixTo4 = netip.MustParsePrefix("2002::/16")
)

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

func containedIn(list []netip.Prefix, ip netip.Addr) bool {
	for _, p := range list {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// notGlobal reports whether a relay at ip must be refused unless private
// relays are allowed: a local address (sdp.IsLocal) or one that IANA's
// special-purpose registries mark not globally reachable.
func notGlobal(ip netip.Addr) bool {
	if sdp.IsLocal(ip) {
		return true
	}
	ip = ip.Unmap().WithZone("")
	if ip.Is4() {
		return containedIn(notGlobalV4, ip) && !containedIn(globalV4, ip)
	}
	switch {
	case nat64.Contains(ip):
		b := ip.As16()
		return notGlobal(netip.AddrFrom4([4]byte(b[12:16])))
	case sixTo4.Contains(ip):
		b := ip.As16()
		return notGlobal(netip.AddrFrom4([4]byte(b[2:6])))
	case !global6.Contains(ip):
		return true
	}
	return containedIn(notGlobalV6, ip) && !containedIn(globalV6, ip)
}
