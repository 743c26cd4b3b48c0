package relaypattern

import (
	"fmt"
	"strings"
)

// Pattern is a parsed relay hostname pattern. The zero value is the empty
// rule "", which matches every hostname. Patterns are immutable values and
// safe for concurrent use.
type Pattern struct {
	rule   string // the rule as given to Parse
	suffix string // rule without '$' and '^', ASCII-lowercased
	exact  bool   // rule started with '^': whole-hostname match
}

// Parse parses a relay pattern rule. A rule must end with '$' (otherwise the
// error matches ErrInvalidPattern), except the empty rule, which matches every
// hostname. A leading '^' (after which the rest up to the '$' is the
// hostname) makes the pattern an exact match; otherwise the pattern matches
// every hostname that ends with the rule's text.
func Parse(rule string) (Pattern, error) {
	if rule == "" {
		return Pattern{}, nil
	}
	body, ok := strings.CutSuffix(rule, "$")
	if !ok {
		return Pattern{}, fmt.Errorf("%w: rule does not end with '$'", ErrInvalidPattern)
	}
	body, exact := strings.CutPrefix(body, "^")
	return Pattern{rule: rule, suffix: lowerASCII(body), exact: exact}, nil
}

// Match reports whether host is acceptable under p. host is a bare hostname
// as returned by url.URL.Hostname (no scheme, port or path). ASCII letters are
// compared case-insensitively; see the package documentation.
func (p Pattern) Match(host string) bool {
	if p.exact {
		return equalFoldASCII(host, p.suffix)
	}
	return hasSuffixFoldASCII(host, p.suffix)
}

// IsSupersetOf reports whether every hostname that other matches is also
// matched by p. The broker accepts a proxy iff the proxy's pattern is a
// superset of the broker's own pattern.
func (p Pattern) IsSupersetOf(other Pattern) bool {
	if p.exact {
		return other.exact && p.suffix == other.suffix
	}
	return strings.HasSuffix(other.suffix, p.suffix)
}

// IsExact reports whether p matches a single hostname (the rule began with
// '^').
func (p Pattern) IsExact() bool { return p.exact }

// String returns the rule p was parsed from, exactly as given to Parse.
func (p Pattern) String() string { return p.rule }

// lowerASCII maps A-Z to a-z and leaves every other byte alone. It does not
// allocate when s has no upper-case ASCII letter.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if 'A' <= s[i] && s[i] <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}

// equalFoldASCII reports whether s equals lower, which is already lower
// case, with A-Z in s folded to lower case.
func equalFoldASCII(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// hasSuffixFoldASCII reports whether s ends with lowerSuffix, which is
// already lower case, with A-Z in s folded to lower case.
func hasSuffixFoldASCII(s, lowerSuffix string) bool {
	return len(s) >= len(lowerSuffix) && equalFoldASCII(s[len(s)-len(lowerSuffix):], lowerSuffix)
}
