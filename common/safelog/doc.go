// Package safelog removes IP addresses from log output.
//
// Scrub replaces every IPv4 and IPv6 address in a string by "[scrubbed]".
// NewHandler wraps a slog.Handler so that every message and attribute it
// passes on is scrubbed; flurry binaries use it for every log line unless
// -unsafe-logging is given. This is the equivalent of Snowflake's
// ptutil/safelog, written as a linear-time scanner instead of regular
// expressions.
//
// # What is an address
//
// An address token is one of
//
//	IPv4         1.2.3.4                  four decimal octets, each 0-255 (leading zeros allowed)
//	IPv4:port    1.2.3.4:443              port is 1-5 decimal digits
//	IPv6         2001:db8:0:0:0:0:0:1     eight groups of 1-4 hex digits
//	             2001:db8::1  ::1  1::  ::  one "::" standing for one or more zero groups
//	             ::ffff:1.2.3.4           the last 32 bits written as an IPv4 address
//	[IPv6]       [2001:db8::1]            brackets are part of the token
//	[IPv6]:port  [::1]:443
//	[IPv6%zone]  [fe80::1%eth0]:443       zone (interface) inside brackets
//	[IPv4]:port  [1.2.3.4]:80
//
// where every ':' of an IPv6 address or before a port may also be written
// URL-encoded as "%3A" or "%3a" (as in wss://relay/?client_ip=2001%3Adb8%3A%3A1).
// Hex digits are case-insensitive. The whole token, brackets and port
// included, becomes "[scrubbed]".
//
// # Delimiting
//
// An unbracketed token is replaced only when it stands on its own:
//
//   - before it: the start of the text, or a byte that is not an ASCII
//     letter, digit, '_', ':' or '.', or a URL escape %XX other than %3A
//     (so "ip=1.2.3.4", "(1.2.3.4)", "/1.2.3.4" and "ip%3D1.2.3.4" are
//     scrubbed, "v1.2.3.4" and "x.1.2.3.4" are not); an IPv4 token may
//     also follow ':' or "%3A" ("ip:1.2.3.4"), an IPv6 token may not;
//   - after it: the end of the text, or a byte that is not an ASCII letter,
//     digit or '_', except '.' followed by a digit, and ':' or "%3A"
//     followed by a hex digit, ':', '.' or '['.
//
// So DTLS fingerprints (33:B6:FA:...:CC:74, 32 groups), MAC addresses (six
// groups), hex strings, times (15:37:31), version numbers with three or five
// parts (1.2.3, 1.2.3.4.5) and hostnames are left alone, while "from
// 129.97.208.23:38310: EOF" and "1.2.3.4." at the end of a sentence are
// scrubbed. A four-part version number such as 1.2.3.4 is indistinguishable
// from an address and is scrubbed. A bracketed token needs no delimiter.
//
// Text next to an address that is not part of the token stays: an
// unbracketed zone ("fe80::1%eth0" becomes "[scrubbed]%eth0") and an
// over-long port ("[::1]:123456" becomes "[scrubbed]:123456").
//
// Deliberate choices where this scanner may differ from Snowflake's regular
// expressions: octets above 255 do not form an address; an IPv4
// address after ':' is scrubbed ("ip:1.2.3.4"); a token followed by ':' and
// a non-hex letter is scrubbed ("1.2.3.4:http"); a token after a URL escape
// ("%3D1.2.3.4") is scrubbed; bracketed zones are understood. Every vector of
// Snowflake's safelog tests gives the same result.
//
// Scrub is idempotent: Scrub(Scrub(s)) == Scrub(s). It does not allocate when
// s contains no address.
package safelog
