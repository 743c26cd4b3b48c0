package sdp

import (
	"net/netip"
	"strings"
)

// cgnat is the shared address space of RFC 6598 (carrier-grade NAT).
var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// thisNetwork is 0.0.0.0/8, "this host on this network" (RFC 1122).
var thisNetwork = netip.MustParsePrefix("0.0.0.0/8")

// IsLocal reports whether ip is not a publicly routable unicast address:
// unspecified, loopback, private (RFC 1918, fc00::/7), link-local,
// carrier-grade NAT (100.64.0.0/10), 0.0.0.0/8, multicast, or invalid.
// IPv4-mapped IPv6 addresses are judged as their IPv4 address.
func IsLocal(ip netip.Addr) bool {
	if !ip.IsValid() {
		return true
	}
	ip = ip.Unmap()
	return ip.IsUnspecified() ||
		ip.IsLoopback() ||
		ip.IsPrivate() ||
		ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() ||
		ip.IsMulticast() ||
		cgnat.Contains(ip) ||
		thisNetwork.Contains(ip)
}

// Candidate is the part of an ICE candidate line Flurry looks at.
type Candidate struct {
	// Address is the candidate's connection address; invalid when the
	// line names a host (for example an mDNS ".local" name).
	Address netip.Addr
	// Host is the address field as written.
	Host string
	// Type is the candidate type: host, srflx, prflx or relay.
	Type string
}

// ParseCandidate parses the value of an "a=candidate:" attribute, with or
// without the "a=" or "candidate:" prefix. ok is false when the line is not a
// well-formed candidate.
func ParseCandidate(line string) (c Candidate, ok bool) {
	line = strings.TrimPrefix(line, "a=")
	line = strings.TrimPrefix(line, "candidate:")
	fields := strings.Fields(line)
	if len(fields) < 8 || fields[6] != "typ" {
		return Candidate{}, false
	}
	c.Host = fields[4]
	c.Type = fields[7]
	if ip, err := netip.ParseAddr(c.Host); err == nil {
		c.Address = ip
	}
	return c, true
}

// lines calls fn for every line of sdp, without its line ending, until fn
// returns false.
func lines(sdp string, fn func(line string) bool) {
	for len(sdp) > 0 {
		line := sdp
		if i := strings.IndexByte(sdp, '\n'); i >= 0 {
			line, sdp = sdp[:i], sdp[i+1:]
		} else {
			sdp = ""
		}
		if !fn(strings.TrimSuffix(line, "\r")) {
			return
		}
	}
}

// connectionAddress returns the address of a "c=IN IP4|IP6 <addr>" line.
func connectionAddress(line string) (netip.Addr, bool) {
	rest, ok := strings.CutPrefix(line, "c=")
	if !ok {
		return netip.Addr{}, false
	}
	fields := strings.Fields(rest)
	if len(fields) < 3 || fields[0] != "IN" || (fields[1] != "IP4" && fields[1] != "IP6") {
		return netip.Addr{}, false
	}
	// A multicast c= line may carry "/ttl"; such an address is local anyway.
	ip, err := netip.ParseAddr(fields[2])
	if err != nil {
		return netip.Addr{}, false
	}
	return ip, true
}

// ClientIP returns the public address of the peer that wrote sdp: the
// address of the first ICE candidate that is a public IP, else the first
// public address on a "c=" line. ok is false when there is none (for
// example a client that only offered private or mDNS candidates).
func ClientIP(sdp string) (ip netip.Addr, ok bool) {
	var fromConnection netip.Addr
	lines(sdp, func(line string) bool {
		if strings.HasPrefix(line, "a=candidate:") {
			c, good := ParseCandidate(line)
			if good && c.Address.IsValid() && !IsLocal(c.Address) {
				ip, ok = c.Address.Unmap(), true
				return false
			}
			return true
		}
		if !fromConnection.IsValid() {
			if a, good := connectionAddress(line); good && !IsLocal(a) {
				fromConnection = a.Unmap()
			}
		}
		return true
	})
	if ok {
		return ip, true
	}
	if fromConnection.IsValid() {
		return fromConnection, true
	}
	return netip.Addr{}, false
}

// StripLocalCandidates returns sdp without the ICE candidate lines whose
// address is local (see IsLocal) or a host name (an mDNS ".local" name
// cannot be reached from elsewhere and may identify the host). Every other
// line, and the line endings, are kept as they are.
func StripLocalCandidates(sdp string) string {
	var b strings.Builder
	b.Grow(len(sdp))
	for len(sdp) > 0 {
		line := sdp
		if i := strings.IndexByte(sdp, '\n'); i >= 0 {
			line, sdp = sdp[:i+1], sdp[i+1:]
		} else {
			sdp = ""
		}
		if strings.HasPrefix(line, "a=candidate:") {
			c, ok := ParseCandidate(strings.TrimRight(line, "\r\n"))
			if !ok || !c.Address.IsValid() || IsLocal(c.Address) {
				continue
			}
		}
		b.WriteString(line)
	}
	return b.String()
}

// HasSessionAttribute reports whether sdp has the session-level attribute
// line "a=<name>" (or "a=<name>:<value>"): one before the first media
// section ("m=" line).
func HasSessionAttribute(sdp, name string) bool {
	found := false
	lines(sdp, func(line string) bool {
		if strings.HasPrefix(line, "m=") {
			return false
		}
		attr, ok := strings.CutPrefix(line, "a=")
		if ok && (attr == name || strings.HasPrefix(attr, name+":")) {
			found = true
			return false
		}
		return true
	})
	return found
}

// AddSessionAttribute returns sdp with the session-level attribute line
// "a=<attr>" inserted before the first media section, or at the end if
// there is none, with the line ending sdp uses (CRLF unless it has only
// bare LFs).
func AddSessionAttribute(sdp, attr string) string {
	eol := "\r\n"
	if strings.Contains(sdp, "\n") && !strings.Contains(sdp, "\r\n") {
		eol = "\n"
	}
	line := "a=" + attr + eol
	if strings.HasPrefix(sdp, "m=") {
		return line + sdp
	}
	if i := strings.Index(sdp, "\nm="); i >= 0 {
		return sdp[:i+1] + line + sdp[i+1:]
	}
	if sdp != "" && !strings.HasSuffix(sdp, "\n") {
		sdp += eol
	}
	return sdp + line
}
