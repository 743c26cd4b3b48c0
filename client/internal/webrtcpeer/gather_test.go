package webrtcpeer

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/messages"
)

// loopbackInterfaces makes pion gather on loopback interfaces only, the
// rest of the SettingEngine as in production: 127.0.0.1 stands for the
// private address of a client behind a home router.
func loopbackInterfaces(se *webrtc.SettingEngine) { webrtcnet.LoopbackInterfaces(se, nil) }

var errStop = errors.New("offer captured")

// offerOf runs d's offer side up to the broker exchange and returns the
// offer it would send.
func offerOf(t *testing.T, d *Dialer) string {
	t.Helper()
	var offer string
	_, err := d.Connect(context.Background(), func(_ context.Context, o string) (string, error) {
		desc, err := messages.DecodeSessionDescription(o)
		if err != nil {
			t.Fatal(err)
		}
		offer = desc.SDP
		return "", errStop
	}, nil)
	if !errors.Is(err, errStop) {
		t.Fatalf("Connect = %v", err)
	}
	return offer
}

// TestOfferBehindNAT: a client whose only address is local still offers
// the server-reflexive address its STUN server reports, and no local
// address, unless KeepLocalAddresses. (A gather-time IP filter dropping
// local addresses would also stop pion's STUN sockets: no candidate at
// all.) The STUN server is a fake on loopback; the offer goes nowhere.
func TestOfferBehindNAT(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	public := netip.MustParseAddr("203.0.113.9")
	stunURL := stuntest.Start(t, public)
	for _, keepLocal := range []bool{false, true} {
		d, err := NewDialer(Config{ICEServers: []webrtc.ICEServer{{URLs: []string{stunURL}}}, KeepLocalAddresses: keepLocal, configureSettingEngine: loopbackInterfaces})
		if err != nil {
			t.Fatal(err)
		}
		var srflx, local int
		for line := range strings.Lines(offerOf(t, d)) {
			c, ok := sdp.ParseCandidate(strings.TrimSpace(line))
			if !strings.HasPrefix(line, "a=candidate:") || !ok {
				continue
			}
			switch {
			case c.Type == "srflx" && c.Address == public:
				srflx++
			case sdp.IsLocal(c.Address):
				local++
			default:
				t.Errorf("keepLocal=%v: unexpected candidate %q", keepLocal, line)
			}
		}
		if srflx == 0 {
			t.Errorf("keepLocal=%v: no server-reflexive candidate at %v", keepLocal, public)
		}
		if got := local > 0; got != keepLocal {
			t.Errorf("keepLocal=%v: %d local candidates in the offer", keepLocal, local)
		}
	}
}
