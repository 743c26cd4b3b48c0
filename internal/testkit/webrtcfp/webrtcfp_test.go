package webrtcfp_test

import (
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/webrtcfp"
)

// TestChromium connects two Chromium pages through the relay and checks
// that the capture holds both hellos and both ICE roles' binding requests.
func TestChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium: takes real seconds (skipped with -short)")
	}
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

// FuzzExtract: captured datagrams are network input; Extract must not
// panic on any of them.
func FuzzExtract(f *testing.F) {
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, false)
	f.Add([]byte{0, 1, 0, 8, 0x21, 0x12, 0xa4, 0x42, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x2a, 0, 8, 0, 0, 0, 0, 0, 0, 0, 0}, true)
	f.Fuzz(func(t *testing.T, b []byte, answerer bool) {
		from := webrtcfp.Offerer
		if answerer {
			from = webrtcfp.Answerer
		}
		f := webrtcfp.Extract([]webrtcfp.Datagram{{From: from, Data: b}, {From: 1 - from, Data: b}})
		if len(f) != len(webrtcfp.Names) {
			t.Fatalf("%d features, want %d", len(f), len(webrtcfp.Names))
		}
	})
}
