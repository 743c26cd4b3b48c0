package webrtcpeer

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	neturl "net/url"
	"strconv"
	"strings"

	"github.com/pion/webrtc/v5"
)

// DefaultSTUNPort is added to STUN URLs without a port.
const DefaultSTUNPort = "3478"

// ParseICEServer checks an ICE server URL and returns it in canonical form,
// with the default port filled in, and, for a STUN server, the host:port to
// use for NAT probing (empty for TURN). Accepted:
//
//	stun:host[:port]
//	turn:user:pass@host[:port][?transport=udp|tcp]
//	turns:user:pass@host[:port][?transport=tcp]
//
// The TURN user name and password are percent-decoded (%2C for a comma,
// %40 for @, %3A for a colon in the user name); both are required. Snowflake's
// client has no TURN support; its other schemes, paths, fragments and other
// query parameters are errors matching ErrICEServer. The error never
// contains the credentials.
func ParseICEServer(s string) (url, hostport string, err error) {
	s = strings.TrimSpace(s)
	scheme, rest, _ := strings.Cut(s, ":")
	var user, pass, query string
	switch scheme {
	case "stun":
		if strings.ContainsAny(rest, "?@") {
			return "", "", fmt.Errorf("%w: %q", ErrICEServer, s)
		}
	case "turn", "turns":
		at := strings.LastIndexByte(rest, '@')
		if at < 0 {
			return "", "", fmt.Errorf("%w: %s: TURN needs user:password@", ErrICEServer, RedactICEServer(s))
		}
		u, p, ok := strings.Cut(rest[:at], ":")
		var uerr, perr error
		user, uerr = neturl.PathUnescape(u)
		pass, perr = neturl.PathUnescape(p)
		if !ok || user == "" || pass == "" || uerr != nil || perr != nil {
			return "", "", fmt.Errorf("%w: %s: bad TURN credentials", ErrICEServer, RedactICEServer(s))
		}
		rest = rest[at+1:]
		rest, query, _ = strings.Cut(rest, "?")
		switch {
		case query == "":
		case scheme == "turn" && (query == "transport=udp" || query == "transport=tcp"):
		case scheme == "turns" && query == "transport=tcp":
		default:
			return "", "", fmt.Errorf("%w: %s: query must be transport=udp or transport=tcp (turns: tcp)", ErrICEServer, RedactICEServer(s))
		}
	default:
		return "", "", fmt.Errorf("%w: %s: only stun:, turn: and turns: URLs are supported", ErrICEServer, RedactICEServer(s))
	}
	if rest == "" || strings.ContainsAny(rest, "/?#@ \t") {
		return "", "", fmt.Errorf("%w: %s", ErrICEServer, RedactICEServer(s))
	}
	host, port := rest, DefaultSTUNPort
	if scheme == "turns" {
		port = DefaultTURNSPort
	}
	if h, p, err := net.SplitHostPort(rest); err == nil {
		host, port = h, p
	} else if strings.Count(rest, ":") > 1 && !strings.HasPrefix(rest, "[") {
		host = rest // bare IPv6 address
	}
	if !validHost(host) {
		return "", "", fmt.Errorf("%w: %s: bad host", ErrICEServer, RedactICEServer(s))
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", "", fmt.Errorf("%w: %s: bad port", ErrICEServer, RedactICEServer(s))
	}
	hostport = net.JoinHostPort(host, port)
	if scheme == "stun" {
		return "stun:" + hostport, hostport, nil
	}
	url = scheme + ":" + escapeCredential(user) + ":" + escapeCredential(pass) + "@" + hostport
	if query != "" {
		url += "?" + query
	}
	return url, "", nil
}

// DefaultTURNSPort is added to turns: URLs without a port.
const DefaultTURNSPort = "5349"

// escapeCredential percent-encodes what ParseICEServer splits on.
func escapeCredential(s string) string {
	return strings.NewReplacer("%", "%25", ":", "%3A", "@", "%40", ",", "%2C", " ", "%20").Replace(s)
}

// RedactICEServer returns s without TURN credentials, for logs and errors.
func RedactICEServer(s string) string {
	scheme, rest, ok := strings.Cut(s, ":")
	if !ok {
		return fmt.Sprintf("%q", s)
	}
	if at := strings.LastIndexByte(rest, '@'); at >= 0 {
		rest = "[credentials]@" + rest[at+1:]
	}
	return fmt.Sprintf("%q", scheme+":"+rest)
}

// iceServer turns a URL ParseICEServer returned into pion's form.
func iceServer(url string) webrtc.ICEServer {
	scheme, rest, _ := strings.Cut(url, ":")
	at := strings.LastIndexByte(rest, '@')
	if scheme == "stun" || at < 0 {
		return webrtc.ICEServer{URLs: []string{url}}
	}
	u, p, _ := strings.Cut(rest[:at], ":")
	user, _ := neturl.PathUnescape(u)
	pass, _ := neturl.PathUnescape(p)
	return webrtc.ICEServer{
		URLs:       []string{scheme + ":" + rest[at+1:]},
		Username:   user,
		Credential: pass,
	}
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

// ParseICEServers parses the ice bridge-line option, already split at
// commas, into pion's form (Config.ICEServers). Entries that
// ParseICEServer rejects are returned in skipped, without credentials, as
// Snowflake skips them. As Snowflake does, the STUN servers are shuffled,
// and when there are more than two only half of them (rounded up) are
// kept, so that not every client contacts every server; every TURN server
// is kept, after the STUN servers. stunHostports are the kept STUN
// servers' host:port, for NAT probing.
func ParseICEServers(list []string) (servers []webrtc.ICEServer, stunHostports, skipped []string) {
	var urls []string
	var turn []string
	for _, s := range list {
		if strings.TrimSpace(s) == "" {
			continue
		}
		u, hp, err := ParseICEServer(s)
		switch {
		case err != nil:
			skipped = append(skipped, RedactICEServer(strings.TrimSpace(s)))
		case hp == "":
			turn = append(turn, u)
		default:
			urls = append(urls, u)
			stunHostports = append(stunHostports, hp)
		}
	}
	rand.Shuffle(len(urls), func(i, j int) {
		urls[i], urls[j] = urls[j], urls[i]
		stunHostports[i], stunHostports[j] = stunHostports[j], stunHostports[i]
	})
	if n := len(urls); n > 2 {
		keep := (n + 1) / 2
		urls, stunHostports = urls[:keep], stunHostports[:keep]
	}
	for _, u := range append(urls, turn...) {
		servers = append(servers, iceServer(u))
	}
	return servers, stunHostports, skipped
}
