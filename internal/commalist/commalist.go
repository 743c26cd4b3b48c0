// Package commalist splits the comma-separated lists that flags and bridge
// lines carry (hostnames, STUN URLs, fronts). It has no dependencies, so
// that role libraries and commands share one implementation.
package commalist

import "strings"

// Split returns the elements of the comma-separated list s, each trimmed
// of spaces, dropping empty ones: "a, b,,c" is [a b c], "" is nil.
func Split(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}
