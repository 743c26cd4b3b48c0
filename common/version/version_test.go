package version

import (
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	const rev = "0123456789abcdef0123456789abcdef01234567"
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: "false"}}
	dirty := []debug.BuildSetting{{Key: "vcs.modified", Value: "true"}, {Key: "vcs.revision", Value: rev}}
	tests := []struct {
		name            string
		version, commit string
		mainVersion     string
		settings        []debug.BuildSetting
		wantShort       string
		wantLine        string
	}{
		{"nothing known", "devel", "", "(devel)", nil, "devel", "x devel commit unknown"},
		{"checkout", "devel", "", "v0.0.0-20261201000000-0123456789ab", vcs, "devel (0123456789ab)", "x devel commit " + rev},
		{"dirty checkout", "devel", "", "(devel)", dirty, "devel (0123456789ab*)", "x devel commit " + rev + "*"},
		{"go install", "devel", "", "v0.1.0", nil, "0.1.0", "x 0.1.0 commit unknown"},
		{"stamped", "0.1.0", "fedcba9876543210", "(devel)", dirty, "0.1.0 (fedcba987654)", "x 0.1.0 commit fedcba9876543210"},
		{"stamped version only", "0.2.0", "", "", vcs, "0.2.0 (0123456789ab)", "x 0.2.0 commit " + rev},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := resolve(tt.version, tt.commit, tt.mainVersion, tt.settings)
			if got := in.short(); got != tt.wantShort {
				t.Errorf("short = %q, want %q", got, tt.wantShort)
			}
			want := tt.wantLine + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH
			if got := in.line("x"); got != want {
				t.Errorf("line = %q, want %q", got, want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	got := Line("flurry-test")
	if !strings.HasPrefix(got, "flurry-test ") || !strings.Contains(got, " commit ") || !strings.Contains(got, runtime.Version()) {
		t.Errorf("Line = %q", got)
	}
	if !strings.HasPrefix(String(), Get().Version) {
		t.Errorf("String() = %q, want prefix %q", String(), Get().Version)
	}
}
