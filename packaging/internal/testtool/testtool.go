package testtool

import (
	"os"
	"os/exec"
	"testing"
)

// Need returns the path of tool, which Debian's package pkg installs.
func Need(t testing.TB, tool, pkg string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (.ci/run installs %s)", tool, pkg)
		}
		t.Skipf("%s is missing (Debian: apt-get install %s)", tool, pkg)
	}
	return p
}

// NeedRoot skips the test unless it runs as root (fails in CI).
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("needs root: %s", why)
	}
	t.Skipf("needs root: %s", why)
}
