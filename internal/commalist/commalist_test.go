package commalist

import (
	"slices"
	"testing"
)

func TestSplit(t *testing.T) {
	for in, want := range map[string][]string{
		"":             nil,
		" , ,":         nil,
		"a":            {"a"},
		" a, b,,c ":    {"a", "b", "c"},
		"stun:x:3478,": {"stun:x:3478"},
	} {
		if got := Split(in); !slices.Equal(got, want) {
			t.Errorf("Split(%q) = %q, want %q", in, got, want)
		}
	}
}
