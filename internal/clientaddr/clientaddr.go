// Package clientaddr finds the address of the client behind an HTTP
// request.
//
// The address is the request's RemoteAddr unless that peer is a trusted
// reverse proxy or CDN (a configured CIDR). Only then are the Forwarded
// (RFC 7239) and, if it is absent, X-Forwarded-For headers read, from the
// right: each hop appended by a trusted proxy is skipped, and the first
// address not in a trusted prefix is the client. A value that does not parse
// stops the walk at the last trusted hop. Anyone can put anything in these
// headers, so nothing in them is believed from an untrusted peer (Snowflake
// believes them from everyone, docs/design.md, weakness 16).
package clientaddr

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"

	"github.com/flurrypt/flurry/internal/commalist"
)

// maxHops bounds how many header entries are examined.
const maxHops = 32

// Resolver extracts client addresses. The zero value trusts nobody.
type Resolver struct {
	trusted []netip.Prefix
}

// New returns a Resolver that believes forwarding headers only from peers in
// trusted.
func New(trusted []netip.Prefix) *Resolver {
	return &Resolver{trusted: append([]netip.Prefix(nil), trusted...)}
}

// Addr returns the client's address, or the zero Addr if RemoteAddr does
// not parse (never the case with net/http's server).
func (r *Resolver) Addr(req *http.Request) netip.Addr {
	addr := parseHostPort(req.RemoteAddr)
	if !addr.IsValid() || !r.isTrusted(addr) {
		return addr
	}
	if vals := req.Header.Values("Forwarded"); len(vals) > 0 {
		return r.walk(addr, vals, forwardedFor)
	}
	if vals := req.Header.Values("X-Forwarded-For"); len(vals) > 0 {
		return r.walk(addr, vals, strings.TrimSpace)
	}
	return addr
}

// IgnoredForwarding reports whether req carries a Forwarded or
// X-Forwarded-For header that Addr did not believe because its peer is not
// trusted. From a loopback or private peer that usually means a reverse
// proxy missing from the trusted list.
func (r *Resolver) IgnoredForwarding(req *http.Request) bool {
	if len(req.Header["Forwarded"]) == 0 && len(req.Header["X-Forwarded-For"]) == 0 {
		return false
	}
	addr := parseHostPort(req.RemoteAddr)
	return addr.IsValid() && !r.isTrusted(addr)
}

func (r *Resolver) isTrusted(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range r.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// walk goes through the comma-separated hops in header values from the
// right. last is the nearest hop, already known to be trusted.
func (r *Resolver) walk(last netip.Addr, vals []string, extract func(string) string) netip.Addr {
	hops := 0
	for i := len(vals) - 1; i >= 0; i-- {
		v := vals[i]
		for v != "" {
			var elem string
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				elem, v = v[j+1:], v[:j]
			} else {
				elem, v = v, ""
			}
			if hops++; hops > maxHops {
				return last
			}
			a := parseHostPort(extract(elem))
			if !a.IsValid() {
				return last
			}
			if !r.isTrusted(a) {
				return a
			}
			last = a
		}
	}
	return last
}

// forwardedFor returns the for= value of one Forwarded element, unquoted.
func forwardedFor(elem string) string {
	for pair := range strings.SplitSeq(elem, ";") {
		k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if ok && strings.EqualFold(k, "for") {
			return strings.Trim(v, `"`)
		}
	}
	return ""
}

// parseHostPort parses "ip", "ip:port", "[ipv6]" or "[ipv6]:port".
func parseHostPort(s string) netip.Addr {
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap()
	}
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
		return a.Unmap()
	}
	return netip.Addr{}
}

// ParsePrefixes parses a comma-separated list of CIDRs or bare addresses,
// as given to a -trusted-proxies flag (flagName names the flag in errors).
func ParsePrefixes(flagName, s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range commalist.Split(s) {
		if p, err := netip.ParsePrefix(f); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("-%s: %q is neither a CIDR nor an address", flagName, f)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}
