package version

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestWithRevision(t *testing.T) {
	tests := []struct {
		name     string
		settings []debug.BuildSetting
		want     string
	}{
		{"no vcs", nil, "1.0"},
		{"short revision ignored", []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}}, "1.0"},
		{"clean", []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}, "1.0 (01234567)"},
		{"modified", []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: "0123456789abcdef"}}, "1.0 (01234567*)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := withRevision("1.0", tt.settings); got != tt.want {
				t.Errorf("withRevision = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestStringStartsWithRelease(t *testing.T) {
	if got := String(); !strings.HasPrefix(got, Release) {
		t.Errorf("String() = %q, want prefix %q", got, Release)
	}
}
