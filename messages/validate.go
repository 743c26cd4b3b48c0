package messages

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"
)

// Protocol versions. Encoders always produce these; decoders accept every
// proxy version with major version 1 and only ClientVersion from clients.
const (
	ProxyVersion  = "1.3"
	ClientVersion = "1.0"
)

// NAT types, as reported by proxies and clients. Values are case-sensitive.
const (
	NATUnknown      = "unknown"
	NATRestricted   = "restricted"
	NATUnrestricted = "unrestricted"
)

// Proxy types. Snowflake's broker knows the five named ones and maps every
// other value to ProxyTypeUnknown.
const (
	ProxyTypeUnknown    = "unknown"
	ProxyTypeStandalone = "standalone"
	ProxyTypeWebExt     = "webext"
	ProxyTypeBadge      = "badge"
	ProxyTypeIPTProxy   = "iptproxy"
	ProxyTypeBloco      = "bloco"
)

// DefaultBridgeFingerprint is the fingerprint assumed when a client poll
// request names none (the bridge all clients used before Snowflake #28651).
const DefaultBridgeFingerprint = "2B280B23E1107BB62ABFC40DDCC8824814F80A72"

// Size bounds. Together they guarantee that any message a decoder accepts
// re-encodes (with Go's HTML escaping, which can turn one byte into six) to
// at most MaxBodySize bytes.
const (
	// MaxBodySize is the largest message body a decoder accepts (Snowflake's
	// broker reads at most this many bytes of a request).
	MaxBodySize = 100000
	// MaxSidLength bounds ProxyPollRequest.Sid and ProxyAnswerRequest.Sid.
	MaxSidLength = 64
	// MaxSessionDescriptionLength bounds an offer or answer (the serialized
	// session description JSON). Real Snowflake offers are 1 to 3 KB.
	MaxSessionDescriptionLength = 16000
	// MaxRelayURLLength bounds ProxyPollResponse.RelayURL.
	MaxRelayURLLength = 1024
	// MaxRelayPatternLength bounds ProxyPollRequest.AcceptedRelayPattern.
	MaxRelayPatternLength = 256
	// MaxErrorLength bounds ClientPollResponse.Error.
	MaxErrorLength = 512
	// MaxStatusLength bounds an unknown Status reported in an error.
	MaxStatusLength = 64
	// MaxProxyTypeLength bounds the Type an encoder will send.
	MaxProxyTypeLength = 64
	// MaxVersionLength bounds a proxy message's Version.
	MaxVersionLength = 16
)

// MaxClients is the largest ProxyPollRequest.Clients value kept by the
// decoder; larger values are clamped to it and negative ones to 0. A proxy
// serving more than 65536 clients at once is not plausible, and the cap keeps
// arithmetic on the count (sums over proxies, histograms) far from overflow.
const MaxClients = 1 << 16

// MaxNextPoll is the largest ProxyPollResponse.NextPoll (milliseconds) the
// decoder keeps: 24 hours. Larger values are clamped to it, negative ones to
// 0 (which means "not given: use the local interval"). Snowflake's broker
// sends at most one hour.
const MaxNextPoll = 24 * 60 * 60 * 1000

// KnownProxyTypes returns the proxy types Snowflake's broker knows, in a
// fixed order, as a fresh slice the caller may modify.
func KnownProxyTypes() []string {
	return []string{ProxyTypeStandalone, ProxyTypeWebExt, ProxyTypeBadge, ProxyTypeIPTProxy, ProxyTypeBloco}
}

// NormalizeProxyType returns s if it is one of KnownProxyTypes and
// ProxyTypeUnknown otherwise (including for "" and "unknown"). It never
// fails: Snowflake encourages projects embedding proxy code to send their own
// type.
func NormalizeProxyType(s string) string {
	switch s {
	case ProxyTypeStandalone, ProxyTypeWebExt, ProxyTypeBadge, ProxyTypeIPTProxy, ProxyTypeBloco:
		return s
	}
	return ProxyTypeUnknown
}

// NormalizeNAT maps "" to NATUnknown, returns the three known NAT types
// unchanged and fails with ErrInvalidNAT (unwrapped, so its text is
// Snowflake's "invalid NAT type") for anything else. Matching is
// case-sensitive, as in Snowflake.
func NormalizeNAT(s string) (string, error) {
	switch s {
	case "":
		return NATUnknown, nil
	case NATUnknown, NATRestricted, NATUnrestricted:
		return s, nil
	}
	return "", ErrInvalidNAT
}

// ValidateSid checks a proxy session id: non-empty (ErrMissingSid), at most
// MaxSidLength bytes, and only characters of the base64 and base64url
// alphabets plus '.', '-', '_' and '=' (ErrInvalidSid). Snowflake proxies send
// 22 characters of unpadded standard base64; the NAT probe uses "stub-sid". A
// valid Sid is safe in log lines and web pages (no spaces, no control
// characters, no markup), but it is proxy-chosen and unbounded in number, so
// never a metric label.
func ValidateSid(s string) error {
	if s == "" {
		return ErrMissingSid
	}
	if len(s) > MaxSidLength {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidSid, MaxSidLength)
	}
	for i := 0; i < len(s); i++ {
		if !isSidByte(s[i]) {
			return fmt.Errorf("%w: character not allowed", ErrInvalidSid)
		}
	}
	return nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isSidByte(c byte) bool {
	return isAlnum(c) || c == '+' || c == '/' || c == '=' || c == '-' || c == '_' || c == '.'
}

func isTokenByte(c byte) bool {
	return isAlnum(c) || c == '-' || c == '_' || c == '.'
}

// isPlainText reports whether s is printable ASCII (spaces only if
// allowSpace) without the markup and quoting characters < > & " ' ` and
// backslash. Such a string is safe in a log line and a web page as is.
func isPlainText(s string, allowSpace bool) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == ' ':
			if !allowSpace {
				return false
			}
		case c < 0x21 || c > 0x7e:
			return false
		case c == '<' || c == '>' || c == '&' || c == '"' || c == '\'' || c == '`' || c == '\\':
			return false
		}
	}
	return true
}

// hasControl reports whether s holds a C0 or C1 control character, DEL, or
// the Unicode line and paragraph separators. s must be valid UTF-8.
func hasControl(s string) bool {
	// Skip 8 bytes at a time while they are printable ASCII (0x20..0x7e).
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		y := x ^ 0x7f*lo // a zero byte where x has DEL
		// With no high bit in x, (x - 0x20*lo) sets a byte's high bit
		// exactly where that byte is below 0x20 or a borrow came from a
		// lower such byte (so only if there is one).
		if (x|(x-0x20*lo)|((y-lo)&^y))&hi != 0 {
			break
		}
	}
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c < 0x20 || c == 0x7f {
				return true
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x80 && r <= 0x9f || r == '\u2028' || r == '\u2029' {
			return true
		}
		i += n
	}
	return false
}

// checkBody applies the checks every decoder makes before parsing.
func checkBody(b []byte) error {
	if len(b) > MaxBodySize {
		return fmt.Errorf("%w: body longer than %d bytes", ErrTooLarge, MaxBodySize)
	}
	if !utf8.Valid(b) {
		return fmt.Errorf("%w: invalid UTF-8", ErrMalformed)
	}
	return nil
}

// checkProxyVersion accepts "1" and "1.<minor>" where minor is up to
// MaxVersionLength-2 token characters (digits in practice; Snowflake itself
// only compares the text before the first '.').
func checkProxyVersion(v string) error {
	major, minor, _ := strings.Cut(v, ".")
	if major != "1" || len(v) > MaxVersionLength {
		return ErrUnknownVersion
	}
	for i := 0; i < len(minor); i++ {
		if !isTokenByte(minor[i]) {
			return ErrUnknownVersion
		}
	}
	return nil
}

// ParseFingerprint decodes a bridge fingerprint: 40 or 64 hex digits (20 or
// 32 bytes), either case. Any other input fails with ErrInvalidFingerprint,
// unwrapped ("cannot decode fingerprint").
func ParseFingerprint(s string) ([]byte, error) {
	if len(s) != 40 && len(s) != 64 {
		return nil, ErrInvalidFingerprint
	}
	b, err := hex.DecodeString(s)
	if err != nil {
		return nil, ErrInvalidFingerprint
	}
	return b, nil
}

// validateRelayPattern checks an AcceptedRelayPattern for size and alphabet;
// its meaning is checked by common/relaypattern.
func validateRelayPattern(p string) error {
	if len(p) > MaxRelayPatternLength {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidRelayPattern, MaxRelayPatternLength)
	}
	if !isPlainText(p, false) {
		return fmt.Errorf("%w: character not allowed", ErrInvalidRelayPattern)
	}
	return nil
}

// validateRelayURL checks a non-empty RelayURL: at most MaxRelayURLLength
// bytes of printable ASCII without spaces, markup, quotes, backslash or the
// characters { } | ^; an absolute ws or wss URL with a host and no user
// information.
func validateRelayURL(s string) error {
	if len(s) > MaxRelayURLLength {
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidRelayURL, MaxRelayURLLength)
	}
	if !isPlainText(s, false) || strings.ContainsAny(s, "{}|^") {
		return fmt.Errorf("%w: character not allowed", ErrInvalidRelayURL)
	}
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Errorf("%w: does not parse", ErrInvalidRelayURL)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return fmt.Errorf("%w: scheme is not ws or wss", ErrInvalidRelayURL)
	}
	if u.Host == "" || u.Opaque != "" {
		return fmt.Errorf("%w: no host", ErrInvalidRelayURL)
	}
	if u.User != nil {
		return fmt.Errorf("%w: has user information", ErrInvalidRelayURL)
	}
	return nil
}

// validateOffer checks a required offer: non-empty (ErrMissingOffer) and a
// valid session description.
func validateOffer(s string) error {
	if s == "" {
		return ErrMissingOffer
	}
	return checkSessionDescription(s)
}
