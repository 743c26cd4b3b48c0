package proxy

import (
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Relay patterns name ports too. Snowflake's patterns (common/relaypattern)
// match the hostname only, so a broker could send a proxy to an allowed
// host on any port. The proxy's own pattern may end in ":ports" before the
// '$':
//
//	pattern                          relay URLs allowed
//	snowflake.torproject.net$        wss://…snowflake.torproject.net (port 443; ws:// port 80)
//	^relay.example:8443$             wss://relay.example:8443/ only
//	relay.example:443,8443$          …relay.example on 443 or 8443
//	^127.0.0.1:*$                    127.0.0.1 on any port (tests, demos)
//	^[2001:db8::1]:8443$             an IPv6 literal with a port, in brackets
//
// Without ports, only the scheme's default port is allowed: 443 for wss://
// (and 80 for ws://, which needs the non-TLS option), and the port of the
// default relay URL when it names one (the operator chose it). The ports part stays
// with the proxy: the broker gets the hostname pattern alone, as Snowflake's
// broker expects.

// maxPatternPorts bounds the ports one pattern lists.
const maxPatternPorts = 16

// portSet is the set of relay ports a pattern allows.
type portSet struct {
	any   bool
	ports []uint16 // empty (and not any): the scheme's default port only
}

// allows reports whether port may be dialled; def is the URL scheme's
// default port.
func (ps portSet) allows(port, def uint16) bool {
	if ps.any {
		return true
	}
	if len(ps.ports) == 0 {
		return port == def
	}
	return slices.Contains(ps.ports, port)
}

// String describes the set for the log.
func (ps portSet) String() string {
	switch {
	case ps.any:
		return "any"
	case len(ps.ports) == 0:
		return "default (443)"
	}
	s := make([]string, len(ps.ports))
	for i, p := range ps.ports {
		s[i] = strconv.Itoa(int(p))
	}
	return strings.Join(s, ",")
}

// splitRelayPattern splits the proxy's relay pattern into the hostname
// pattern (common/relaypattern syntax, sent to the broker) and the ports it
// allows. A rule without a ports part is returned as it is.
func splitRelayPattern(rule string) (string, portSet, error) {
	body, ok := strings.CutSuffix(rule, "$")
	i := strings.LastIndexByte(body, ':')
	if !ok || i < 0 {
		return rule, portSet{}, nil
	}
	host, list := body[:i], body[i+1:]
	exact := strings.HasPrefix(host, "^")
	bare := strings.TrimPrefix(host, "^")
	switch {
	case strings.HasPrefix(bare, "[") && strings.HasSuffix(bare, "]"):
		bare = bare[1 : len(bare)-1]
	case strings.Contains(bare, ":"), list == "" || strings.Trim(list, "0123456789,*") != "":
		// An IPv6 literal without brackets ("::1$"), or no ports part.
		return rule, portSet{}, nil
	}
	var ps portSet
	if list == "*" {
		ps.any = true
	} else {
		for f := range strings.SplitSeq(list, ",") {
			n, err := strconv.ParseUint(f, 10, 16)
			if err != nil || n == 0 {
				return "", portSet{}, fmt.Errorf("port %q in relay pattern %q is not a number from 1 to 65535", f, rule)
			}
			if !slices.Contains(ps.ports, uint16(n)) {
				ps.ports = append(ps.ports, uint16(n))
			}
		}
		if len(ps.ports) > maxPatternPorts {
			return "", portSet{}, fmt.Errorf("relay pattern %q lists more than %d ports", rule, maxPatternPorts)
		}
	}
	if exact {
		bare = "^" + bare
	}
	return bare + "$", ps, nil
}

// withRelayPort adds the explicit port of u (the default relay URL) to
// a set that names no ports, so that the operator's own relay is allowed on
// the port they gave it. Sets that name ports are kept as they are.
func (ps portSet) withRelayPort(u *url.URL) portSet {
	if ps.any || len(ps.ports) > 0 || u.Port() == "" {
		return ps
	}
	n, err := strconv.ParseUint(u.Port(), 10, 16)
	def := defaultPort(u.Scheme)
	if err != nil || n == 0 || uint16(n) == def {
		return ps
	}
	return portSet{ports: []uint16{def, uint16(n)}}
}

// defaultPort is the port of a ws:// or wss:// URL without one.
func defaultPort(scheme string) uint16 {
	if scheme == "ws" {
		return 80
	}
	return 443
}
