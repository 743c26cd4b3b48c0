package main

import (
	"strings"
	"testing"
)

const config = `{"config":{"scanner_name":"govulncheck","go_version":"go1.26.8","scan_level":"symbol"}}
{"progress":{"message":"Scanning your code..."}}
{"osv":{"id":"GO-2026-0001"}}
`

func TestGate(t *testing.T) {
	tests := []struct {
		name       string
		findings   string
		wantFailed bool
		want       []string // lines the output must contain
	}{
		{
			name: "nothing found",
			want: []string{"no known vulnerabilities"},
		},
		{
			// go1.26.10 is newer than go1.26.9: versions compare as
			// numbers, not strings.
			name: "standard library warns with the newest fixing release",
			findings: `{"finding":{"osv":"GO-2026-0002","fixed_version":"v1.26.10","trace":[{"module":"stdlib","version":"v1.26.8"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http"}]}}
{"finding":{"osv":"GO-2026-0001","fixed_version":"v1.26.9","trace":[{"module":"stdlib","version":"v1.26.8","package":"net/http","function":"Error"},{"module":"example.com/m","function":"f"}]}}`,
			want: []string{
				"warning: standard library go1.26.8: GO-2026-0001 (called), fixed in go1.26.9",
				"warning: standard library go1.26.8: GO-2026-0002 (required), fixed in go1.26.10",
				"warning: release builds need go1.26.10 or later (this machine has go1.26.8)",
			},
		},
		{
			name:       "a module with a fix fails, at any level",
			findings:   `{"finding":{"osv":"GO-2026-0003","fixed_version":"v1.2.7","trace":[{"module":"github.com/andybalholm/brotli","version":"v1.0.6"}]}}`,
			wantFailed: true,
			want:       []string{"FAIL: github.com/andybalholm/brotli@v1.0.6: GO-2026-0003 (required), fixed in v1.2.7: go get github.com/andybalholm/brotli@v1.2.7"},
		},
		{
			name:     "a module without a fix warns",
			findings: `{"finding":{"osv":"GO-2026-0004","trace":[{"module":"example.com/x","version":"v0.1.0","package":"example.com/x/y"}]}}`,
			want:     []string{"warning: example.com/x@v0.1.0: GO-2026-0004 (imported), no fixed version yet"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			failed, err := gate(strings.NewReader(config+tt.findings), &out)
			if err != nil {
				t.Fatal(err)
			}
			if failed != tt.wantFailed {
				t.Errorf("failed = %v, want %v; output:\n%s", failed, tt.wantFailed, out.String())
			}
			for _, line := range tt.want {
				if !strings.Contains(out.String(), line+"\n") {
					t.Errorf("output lacks %q:\n%s", line, out.String())
				}
			}
		})
	}
}

// TestGateRejectsOtherInput: empty, truncated or foreign input is an error,
// never a pass.
func TestGateRejectsOtherInput(t *testing.T) {
	for _, in := range []string{
		"",
		`{"finding":{"osv":"GO-2026-0001","trace":[{"module":"stdlib"}]}}`,
		config + `{"finding":{"osv":"GO-2026-0001","trace":[]}}`,
		config + `{"finding":`,
		"govulncheck: loading packages: exit status 1",
	} {
		var out strings.Builder
		if _, err := gate(strings.NewReader(in), &out); err == nil {
			t.Errorf("gate(%q) passed, want an error; output:\n%s", in, out.String())
		}
	}
}
