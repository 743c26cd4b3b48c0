package relay

import "net/netip"

// parseClientIP parses the client_ip query parameter that a proxy appends to
// the relay URL. Anything but a plain, specified IP address (no brackets, no
// port, no zone) yields the zero Addr, meaning "unknown": an unspecified
// address such as 0.0.0.0 or :: is useless to tor (Snowflake issue 33157).
func parseClientIP(s string) netip.Addr {
	a, err := netip.ParseAddr(s)
	if err != nil || a.Zone() != "" || a.IsUnspecified() {
		return netip.Addr{}
	}
	return a.Unmap()
}
