package webrtcfp_test

import (
	"testing"

	"github.com/flurrypt/flurry/internal/webrtcfp"
)

// TestChromium connects two Chromium pages through the relay and checks
// that the capture holds both hellos and both ICE roles' binding requests.
func TestChromium(t *testing.T) {
	f := webrtcfp.Extract(webrtcfp.Chromium(t, 1)[0])
	for _, n := range webrtcfp.Names {
		t.Logf("%-45s %s", n, f[n])
	}
	for _, n := range []string{"client hello: cipher suites", "server hello: cipher suite", "stun controlling: binding request attributes", "stun controlled: binding request attributes"} {
		if f[n] == "-" {
			t.Errorf("%s: not captured", n)
		}
	}
}
