//go:build race

package client_test

// raceEnabled reports whether the race detector is on (see norace_test.go).
const raceEnabled = true
