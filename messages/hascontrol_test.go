package messages

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// naiveHasControl is hasControl without the 8-byte fast path.
func naiveHasControl(s string) bool {
	for _, r := range s {
		if r < 0x20 || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029' {
			return true
		}
	}
	return false
}

// TestHasControlEveryOffset puts every ASCII byte and some non-ASCII
// characters at every offset of strings long enough for the 8-byte fast path.
func TestHasControlEveryOffset(t *testing.T) {
	var specials []string
	for c := range 0x80 {
		specials = append(specials, string(rune(c)))
	}
	specials = append(specials, "\u0080", "\u009f", "\u00a0", "é", "\u2028", "\u2029", "\u2027", "😀")
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24} {
		for pos := 0; pos <= n; pos++ {
			for _, sp := range specials {
				s := strings.Repeat("a", pos) + sp + strings.Repeat("~", n-pos)
				if !utf8.ValidString(s) {
					continue
				}
				if got, want := hasControl(s), naiveHasControl(s); got != want {
					t.Fatalf("hasControl(%q) = %v, want %v", s, got, want)
				}
			}
		}
	}
}
