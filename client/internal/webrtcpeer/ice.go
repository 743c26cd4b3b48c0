package webrtcpeer

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// DefaultSTUNPort is added to STUN URLs without a port.
const DefaultSTUNPort = "3478"

// ParseICEServer checks a STUN URL ("stun:host" or "stun:host:port") and
// returns it with the default port filled in, and the host:port to use for
// NAT probing. Any other scheme (TURN included: Snowflake's client has no
// TURN support), a path, query, fragment or user information is an error
// matching ErrICEServer.
func ParseICEServer(s string) (stunURL, hostport string, err error) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(s), "stun:")
	if !ok {
		return "", "", fmt.Errorf("%w: %q: only stun: URLs are supported", ErrICEServer, s)
	}
	if rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return "", "", fmt.Errorf("%w: %q", ErrICEServer, s)
	}
	host, port := rest, DefaultSTUNPort
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
	} else if strings.Count(rest, ":") > 1 && !strings.HasPrefix(rest, "[") {
		host = rest // bare IPv6 address
	}
	if !validHost(host) {
		return "", "", fmt.Errorf("%w: %q: bad host", ErrICEServer, s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("%w: %q: bad port", ErrICEServer, s)
	}
	hostport = net.JoinHostPort(host, port)
	return "stun:" + hostport, hostport, nil
}

// validHost accepts an IP address (IPv6 without brackets) or a DNS name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return !strings.Contains(h, "%") // no zones
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for i, r := range h {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' ||
			(r == '-' || r == '.' || r == '_') && i > 0 && i < len(h)-1
		if !ok {
			return false
		}
	}
	return true
}

// ParseICEServers parses a list of STUN URLs (the ice bridge-line option,
// already split at commas). Entries that ParseICEServer rejects are
// returned in skipped, as Snowflake skips them. As Snowflake does, the list
// is shuffled, and when it has more than two entries only half of them
// (rounded up) are kept, so that not every client contacts every server.
func ParseICEServers(list []string) (urls, hostports, skipped []string) {
	for _, s := range list {
		if strings.TrimSpace(s) == "" {
			continue
		}
		u, hp, err := ParseICEServer(s)
		if err != nil {
			skipped = append(skipped, s)
			continue
		}
		urls = append(urls, u)
		hostports = append(hostports, hp)
	}
	rand.Shuffle(len(urls), func(i, j int) {
		urls[i], urls[j] = urls[j], urls[i]
		hostports[i], hostports[j] = hostports[j], hostports[i]
	})
	if n := len(urls); n > 2 {
		keep := (n + 1) / 2
		urls, hostports = urls[:keep], hostports[:keep]
	}
	return urls, hostports, skipped
}
