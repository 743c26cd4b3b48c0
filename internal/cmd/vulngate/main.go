// Command vulngate reads govulncheck's JSON output (-format json) on
// standard input and decides what `make lint` makes of it.
//
// A finding in a module we require fails the gate when the module has a
// fixed version: the remedy is `go get module@fixed`, which every machine can
// do. A finding in the standard library only warns, naming the Go release
// that fixes it: a machine can only test with the Go it has, and release
// builds must use at least the newest of those releases (README,
// "Release builds"). A finding without any fixed version warns too.
//
// The gate counts findings at every level govulncheck reports (module,
// imported package, called function), because an upgrade is cheap and a
// call graph may miss a path; each line says which level it reached.
package main

import (
	"fmt"
	"os"
)

func main() {
	failed, err := gate(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "vulngate:", err)
		os.Exit(2)
	}
	if failed {
		os.Exit(1)
	}
}
