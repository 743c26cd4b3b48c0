//go:build !race

package client_test

// raceEnabled reports whether the race detector is on: it slows the chain
// down far beyond the timings the close-watch tests rely on.
const raceEnabled = false
