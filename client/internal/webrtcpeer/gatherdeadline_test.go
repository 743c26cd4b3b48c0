package webrtcpeer

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"
)

// TestGatherDeadline: a STUN server that never answers holds ICE gathering
// open (pion waits seconds for it); the offer goes out at the gather
// deadline with the candidates found so far, not when gathering ends.
func TestGatherDeadline(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	silent, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	d, err := NewDialer(Config{
		ICEServers:             []webrtc.ICEServer{{URLs: []string{"stun:" + silent.LocalAddr().String()}}},
		KeepLocalAddresses:     true,
		GatherTimeout:          200 * time.Millisecond,
		configureSettingEngine: loopbackInterfaces,
	})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	offer := offerOf(t, d)
	elapsed := time.Since(start)
	t.Logf("offer after %v", elapsed)
	if strings.Contains(offer, "a=end-of-candidates") {
		t.Errorf("offer sent after gathering completed, not at the deadline:\n%s", offer)
	}
	if !strings.Contains(offer, "a=candidate:") {
		t.Errorf("offer without the host candidates found before the deadline:\n%s", offer)
	}
}

// TestDefaultTimeouts: the defaults are Snowflake's (a proxy silent for
// 20 s is dropped) and the gather deadline's.
func TestDefaultTimeouts(t *testing.T) {
	d, err := NewDialer(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.IdleTimeout != 20*time.Second || d.cfg.GatherTimeout != 5*time.Second || d.cfg.OpenTimeout != 10*time.Second {
		t.Errorf("defaults: idle %v, gather %v, open %v", d.cfg.IdleTimeout, d.cfg.GatherTimeout, d.cfg.OpenTimeout)
	}
}
