package safelog

import "strings"

// Replacement is what Scrub writes in place of each address.
const Replacement = "[scrubbed]"

// bytestring is the set of types the scanner reads.
type bytestring interface{ ~string | ~[]byte }

// Scrub returns s with every delimited IPv4 and IPv6 address (see the package
// documentation) replaced by "[scrubbed]". It returns s itself, without
// allocating, when there is nothing to replace.
func Scrub(s string) string {
	start, end := nextAddress(s, 0, 0)
	if start < 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for start >= 0 {
		b.WriteString(s[last:start])
		b.WriteString(Replacement)
		last = end
		start, end = nextAddress(s, end, end)
	}
	b.WriteString(s[last:])
	return b.String()
}

// appendScrubbed appends s to dst with every address replaced, and reports
// whether anything was replaced.
func appendScrubbed[T bytestring](dst []byte, s T) ([]byte, bool) {
	last, replaced := 0, false
	for start, end := nextAddress(s, 0, 0); start >= 0; start, end = nextAddress(s, end, end) {
		dst = append(dst, s[last:start]...)
		dst = append(dst, Replacement...)
		last, replaced = end, true
	}
	return append(dst, s[last:]...), replaced
}

// containsAddress reports whether Scrub would change s.
func containsAddress[T bytestring](s T) bool {
	start, _ := nextAddress(s, 0, 0)
	return start >= 0
}

// nextAddress returns the byte range [start, end) of the first address token
// that begins at or after from, or -1, -1. replacedUpTo is the end of the
// previous replacement (0 for none): the scanner judges a token's left
// delimiter by the text as it will be written, in which the byte before
// position replacedUpTo is the ']' of "[scrubbed]". That is what makes Scrub
// idempotent.
//
// Every position is examined at most a bounded number of times (address
// tokens are at most a few dozen bytes long and no parse goes further), so the
// scan is linear in len(s).
func nextAddress[T bytestring](s T, from, replacedUpTo int) (start, end int) {
	for i := from; i < len(s); i++ {
		c := s[i]
		if !maybeStart(c) {
			continue
		}
		if c == '[' {
			// A bracketed token needs no left delimiter: the bracket is one.
			if e := bracketed(s, i); e > 0 {
				return i, e
			}
			continue
		}
		delimited := leftDelimited(s, i, replacedUpTo)
		// An IPv4 address may also follow a colon ("ip:1.2.3.4"): no
		// fingerprint, time or version number contains a dotted quad.
		if isDigit(c) && (delimited || afterColon(s, i, replacedUpTo)) {
			if e := ipv4WithPort(s, i); e > 0 && rightDelimited(s, e) {
				return i, e
			}
		}
		if delimited {
			if e := ipv6(s, i); e > 0 && rightDelimited(s, e) {
				return i, e
			}
		}
	}
	return -1, -1
}

// bracketed parses "[" address ["%" zone] "]" [sep port] at s[i] == '[' and
// returns the end of the token, or 0.
func bracketed[T bytestring](s T, i int) int {
	j := ipv4(s, i+1)
	if j == 0 {
		j = ipv6(s, i+1)
		if j == 0 {
			return 0
		}
		// Optional zone: '%' and zone characters, not an encoded colon.
		if j < len(s) && s[j] == '%' && sepLen(s, j) == 0 {
			k := j + 1
			for k < len(s) && k-j <= maxZone && isZoneChar(s[k]) {
				k++
			}
			if k > j+1 {
				j = k
			}
		}
	}
	if j >= len(s) || s[j] != ']' {
		return 0
	}
	j++
	if e := port(s, j); e > 0 {
		j = e
	}
	return j
}

// maxZone bounds the length of an IPv6 zone inside brackets.
const maxZone = 64

// ipv4WithPort parses an IPv4 address with an optional port and returns its
// end, or 0.
func ipv4WithPort[T bytestring](s T, i int) int {
	j := ipv4(s, i)
	if j == 0 {
		return 0
	}
	if e := port(s, j); e > 0 {
		return e
	}
	return j
}

// port parses sep and 1-5 decimal digits not followed by another digit at
// s[i] and returns the end, or 0.
func port[T bytestring](s T, i int) int {
	n := sepLen(s, i)
	if n == 0 {
		return 0
	}
	j := i + n
	k := j
	for k < len(s) && k-j < 5 && isDigit(s[k]) {
		k++
	}
	if k == j || (k < len(s) && isDigit(s[k])) {
		return 0
	}
	return k
}

// ipv4 parses a dotted quad of decimal octets 0-255 at s[i] and returns its
// end, or 0. It does not look past the last octet.
func ipv4[T bytestring](s T, i int) int {
	j := i
	for octet := 0; octet < 4; octet++ {
		if octet > 0 {
			if j >= len(s) || s[j] != '.' {
				return 0
			}
			j++
		}
		v, k := 0, j
		for k < len(s) && k-j < 3 && isDigit(s[k]) {
			v = v*10 + int(s[k]-'0')
			k++
		}
		if k == j || v > 255 {
			return 0
		}
		j = k
	}
	return j
}

// ipv6 parses an IPv6 address (RFC 4291 section 2.2 text forms, with ':' or
// %3A separators) at s[i] and returns its end, or 0. It takes the longest
// valid address and leaves a separator that does not continue it (as in
// "::1:" or "1:2:3:4:5:6:7:8:") unconsumed.
func ipv6[T bytestring](s T, i int) int {
	j := i
	groups := 0       // 16-bit groups written out; an IPv4 suffix counts 2
	ellipsis := false // "::" seen
	// Leading "::".
	if n := sepLen(s, j); n > 0 {
		m := sepLen(s, j+n)
		if m == 0 {
			return 0
		}
		j += n + m
		ellipsis = true
	}
	for {
		if (!ellipsis && groups == 8) || (ellipsis && groups == 7) {
			break
		}
		// An IPv4 suffix may take the place of the last two groups.
		if (!ellipsis && groups == 6) || (ellipsis && groups <= 5) {
			if e := ipv4(s, j); e > 0 {
				groups += 2
				j = e
				break
			}
		}
		k := j
		for k < len(s) && k-j < 4 && isHex(s[k]) {
			k++
		}
		if k == j {
			// Only reachable right after "::" (a lone ':' is never
			// consumed): the address ends with the ellipsis.
			break
		}
		groups++
		j = k
		n := sepLen(s, j)
		if n == 0 {
			break
		}
		if m := sepLen(s, j+n); m > 0 {
			if ellipsis || groups == 8 {
				break // a second "::", or one after eight groups, is not part of the address
			}
			ellipsis = true
			j += n + m
			continue
		}
		// A single separator belongs to the address only if a group
		// follows it and the address is not yet complete.
		if (!ellipsis && groups == 8) || (ellipsis && groups == 7) || !isHex(at(s, j+n)) {
			break
		}
		j += n
	}
	if ellipsis && groups <= 7 || !ellipsis && groups == 8 {
		return j
	}
	return 0
}

// sepLen returns the length of the separator at s[i]: 1 for ':', 3 for
// "%3A" or "%3a", 0 for anything else.
func sepLen[T bytestring](s T, i int) int {
	if i >= len(s) {
		return 0
	}
	if s[i] == ':' {
		return 1
	}
	if s[i] == '%' && i+2 < len(s) && s[i+1] == '3' && (s[i+2] == 'A' || s[i+2] == 'a') {
		return 3
	}
	return 0
}

// leftDelimited reports whether an unbracketed token may start at s[i]. The
// byte before i is judged as it will be written: ']' if a replacement ends at
// i.
func leftDelimited[T bytestring](s T, i, replacedUpTo int) bool {
	if i == 0 || i == replacedUpTo {
		return true
	}
	c := s[i-1]
	if c == '%' && isHex(s[i]) && isHex(at(s, i+1)) {
		return false // s[i] is the first digit of a URL escape %XX
	}
	if !isWord(c) && c != ':' && c != '.' {
		return true
	}
	// A URL escape %XX other than an encoded colon, wholly after the last
	// replacement (a replacement contains no '%').
	return i-3 >= replacedUpTo && s[i-3] == '%' && isHex(s[i-2]) && isHex(c) && sepLen(s, i-3) == 0
}

// afterColon reports whether s[i] follows ':' or "%3A" that is not part of a
// replacement.
func afterColon[T bytestring](s T, i, replacedUpTo int) bool {
	return i-1 >= replacedUpTo && s[i-1] == ':' || i-3 >= replacedUpTo && sepLen(s, i-3) == 3
}

// rightDelimited reports whether a token may end at s[j].
func rightDelimited[T bytestring](s T, j int) bool {
	if j >= len(s) {
		return true
	}
	c := s[j]
	switch {
	case isWord(c):
		return false
	case c == '.':
		return !isDigit(at(s, j+1))
	}
	if n := sepLen(s, j); n > 0 {
		return !continuesToken(at(s, j+n)) && sepLen(s, j+n) == 0
	}
	return true
}

// continuesToken reports whether c after a ':' makes the colon part of a
// longer token (a fingerprint, a time, a longer address, a bracketed
// address) rather than
// punctuation, as in "from 1.2.3.4: EOF" or "1.2.3.4:http".
func continuesToken(c byte) bool { return isHex(c) || c == ':' || c == '.' || c == '[' }

// at returns s[i], or 0 past the end.
func at[T bytestring](s T, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return 0
}

// Bit sets of the bytes a token can start with: hex digits, ':', '%' and '['.
const (
	startLow  uint64 = 1<<'%' | 0x3ff<<'0' | 1<<':'                  // bytes 0-63
	startHigh uint64 = 0x3f<<('A'-64) | 1<<('['-64) | 0x3f<<('a'-64) // bytes 64-127
)

// maybeStart reports whether a token can start with c.
func maybeStart(c byte) bool {
	if c < 64 {
		return startLow&(1<<c) != 0
	}
	return c < 128 && startHigh&(1<<(c-64)) != 0
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isWord(c byte) bool {
	return isDigit(c) || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_'
}

func isZoneChar(c byte) bool { return isWord(c) || c == '-' || c == '.' || c == '~' }
