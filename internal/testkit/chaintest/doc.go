// Package chaintest runs Flurry's real roles inside a test's own process,
// on loopback: a TCP echo target, a relay, a broker whose only bridge is
// that relay (given in memory), and proxies that WebRTC-filter to
// loopback. A client under test then carries bytes end to end. Everything
// a helper starts stops when the test ends.
//
// It is for tests only (internal/testkit/deptest keeps it out of the product).
// Goroutine-leak checks that allow for kcp-go's background goroutines are
// in the leak subpackage.
package chaintest
