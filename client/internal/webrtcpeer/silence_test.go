package webrtcpeer

import (
	"testing"
	"time"
)

// A proxy that dies during a download is quiet, so that a replacement is
// sought, before it is dropped, on paths with round trips beyond half a
// second; and never before a live proxy's answers to the two keepalives
// sent into the silence are overdue.
func TestSilenceDeadlines(t *testing.T) {
	dead := DefaultDeadPeerTimeout
	for _, rtt := range []time.Duration{0, 20 * time.Millisecond, 150 * time.Millisecond,
		300 * time.Millisecond, 400 * time.Millisecond, 550 * time.Millisecond} {
		quiet, die := silenceDeadlines(rtt, dead)
		if quiet >= die {
			t.Errorf("rtt %v: quiet after %v, not before the drop after %v", rtt, quiet, die)
		}
		// ICE reports the silence half the timeout in; its second
		// keepalive went out a quarter of the timeout before that.
		if waited := quiet + dead/4; waited < rtt+rtt/4 {
			t.Errorf("rtt %v: quiet when the second keepalive has waited %v", rtt, waited)
		}
	}
}
