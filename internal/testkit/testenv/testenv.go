// Package testenv decides what a test does when something it needs from the
// machine (a Debian package, root, /proc) is missing: on a developer's
// machine it skips with a message naming the fix; under CI (CI=true) it
// fails, because CI installs everything and a skip there would hide a test
// that never ran.
package testenv

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

// InCI reports whether the tests run under CI (the CI variable is true).
func InCI() bool {
	ci, _ := strconv.ParseBool(os.Getenv("CI"))
	return ci
}

// Missing stops the test because what it needs is not there: a skip on a
// developer's machine, a failure under CI. format and args say what is
// missing and how to get it.
func Missing(tb testing.TB, format string, args ...any) {
	tb.Helper()
	if InCI() {
		tb.Fatalf("CI=true and a test requirement is missing: "+format, args...)
	}
	tb.Skipf(format, args...)
}

// LookPath returns the path of the named command, or stops the test through
// Missing, naming the Debian package that provides it.
func LookPath(tb testing.TB, name, debianPackage string) string {
	tb.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, "%s is not installed (apt-get install %s): %v", name, debianPackage, err)
	}
	return path
}

// Executable stops the test through Missing unless path is a regular file
// with an execute bit; debianPackage names where it comes from.
func Executable(tb testing.TB, path, debianPackage string) {
	tb.Helper()
	fi, err := os.Stat(path)
	if err != nil || !fi.Mode().IsRegular() || fi.Mode()&0o111 == 0 {
		Missing(tb, "%s is not installed (apt-get install %s): %v", path, debianPackage, err)
	}
}

// Root stops the test through Missing unless it runs as root; why says
// what needs it.
func Root(tb testing.TB, why string) {
	tb.Helper()
	if os.Geteuid() != 0 {
		Missing(tb, "%s need root", why)
	}
}
