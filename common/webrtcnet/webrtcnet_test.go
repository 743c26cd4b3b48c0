package webrtcnet

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/sdp"
)

// newOfferer returns a loopback-only peer connection with a DataChannel.
func newOfferer(t *testing.T) *webrtc.PeerConnection {
	t.Helper()
	var se webrtc.SettingEngine
	LoopbackOnly(&se, nil)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.GracefulClose() })
	if _, err := pc.CreateDataChannel("test", nil); err != nil {
		t.Fatal(err)
	}
	return pc
}

// TestLocalDescription: a loopback-only peer gathers loopback candidates
// only; kept, they are all in the description, stripped, none is.
func TestLocalDescription(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, strip := range []bool{false, true} {
		d, err := LocalDescription(context.Background(), newOfferer(t), webrtc.SDPTypeOffer, time.Minute, strip)
		if err != nil {
			t.Fatal(err)
		}
		if !d.Complete || !d.AnyCandidate {
			t.Errorf("strip=%v: Complete %v, AnyCandidate %v; want both", strip, d.Complete, d.AnyCandidate)
		}
		var n int
		for line := range strings.Lines(d.SDP) {
			c, ok := sdp.ParseCandidate(strings.TrimSpace(line))
			if !ok {
				continue
			}
			n++
			if !c.Address.IsLoopback() {
				t.Errorf("strip=%v: candidate off loopback: %q", strip, line)
			}
		}
		if strip != (n == 0) {
			t.Errorf("strip=%v: %d candidates in\n%s", strip, n, d.SDP)
		}
	}
}

// TestLocalDescriptionContext: an ended context ends the wait with its
// error.
func TestLocalDescriptionContext(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LocalDescription(ctx, newOfferer(t), webrtc.SDPTypeOffer, time.Minute, false); !errors.Is(err, context.Canceled) {
		t.Errorf("LocalDescription = %v, want context.Canceled", err)
	}
}
