package webrtcpeer_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/client/internal/webrtcpeer"
	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/testkit/webrtcfp"
	"github.com/flurrypt/flurry/messages"
)

// unreachable are the features no covert DTLS mode can make match a
// browser, and why. The table shows them; docs/fingerprinting.md explains.
var unreachable = map[string]string{}

// superset are the features where mimic may send more variants than
// Chromium, as long as each of Chromium's is among them, and why.
var superset = map[string]string{
	"stun controlling: binding request attributes": "pion/ice's first checks, before it nominates, carry no USE-CANDIDATE",
}

// TestFingerprintAgainstChromium compares, feature by feature, the STUN
// and DTLS a censor sees between Flurry's client (the offerer: its real
// Dialer) and a proxy's peer (the answerer: the proxy's DTLS settings),
// in each covert DTLS mode, with what two pages of the Chromium on this
// machine send. It prints the table docs/fingerprinting.md shows. With
// mimic, every feature matches except those in unreachable; where Chromium
// varies a feature between connections (the extension order), mimic must
// vary it too.
func TestFingerprintAgainstChromium(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Chromium: takes real seconds (skipped with -short)")
	}
	t.Cleanup(func() { goleak.VerifyNone(t) }) // runs last
	chromium := webrtcfp.Chromium(t, 2)
	chrome := [2]webrtcfp.Features{webrtcfp.Extract(chromium[0]), webrtcfp.Extract(chromium[1])}

	modes := []covertdtls.Mode{covertdtls.Disable, covertdtls.Mimic, covertdtls.Randomize, covertdtls.RandomizeMimic}
	flurry := map[covertdtls.Mode][2]webrtcfp.Features{}
	for _, m := range modes {
		flurry[m] = [2]webrtcfp.Features{flurryPair(t, m), flurryPair(t, m)}
	}

	var table strings.Builder
	fmt.Fprintf(&table, "| feature | Chromium | %s |\n|---|---|%s\n", joinModes(modes, " | "), strings.Repeat("---|", len(modes)))
	for _, n := range webrtcfp.Names {
		varies := chrome[0][n] != chrome[1][n]
		want := chrome[0][n]
		if varies {
			want = "(varies: " + want + " / " + chrome[1][n] + ")"
		}
		fmt.Fprintf(&table, "| %s | %s |", n, want)
		for _, m := range modes {
			got := flurry[m]
			var cell string
			switch {
			case varies && got[0][n] != got[1][n]:
				cell = "varies too"
			case !varies && got[0][n] == chrome[0][n] && got[1][n] == chrome[0][n]:
				cell = "same"
			case got[0][n] != got[1][n]:
				cell = "(varies: " + got[0][n] + " / " + got[1][n] + ")"
			default:
				cell = got[0][n]
			}
			fmt.Fprintf(&table, " %s |", cell)
			if m == covertdtls.Mimic && cell != "same" && cell != "varies too" {
				if why, ok := unreachable[n]; ok {
					t.Logf("mimic differs from Chromium in %q (%s)", n, why)
				} else if why, ok := superset[n]; ok && includes(got[0][n], chrome[0][n]) && includes(got[1][n], chrome[0][n]) {
					t.Logf("mimic sends more variants than Chromium in %q (%s)", n, why)
				} else {
					t.Errorf("mimic differs from Chromium in %q: %s, Chromium %s", n, cell, want)
				}
			}
		}
		table.WriteString("\n")
	}
	t.Logf("Flurry's client (offerer) and proxy (answerer) against two Chromium pages:\n%s", table.String())
}

// includes reports whether every variant of want (" ; "-separated) is
// among got's.
func includes(got, want string) bool {
	variants := strings.Split(got, " ; ")
	for _, w := range strings.Split(want, " ; ") {
		if !slices.Contains(variants, w) {
			return false
		}
	}
	return true
}

func joinModes(modes []covertdtls.Mode, sep string) string {
	var s []string
	for _, m := range modes {
		s = append(s, m.String())
	}
	return strings.Join(s, sep)
}

// flurryPair connects the client's Dialer to a peer configured as a
// proxy's, both on loopback with mode, through a relay, and returns what
// they sent.
func flurryPair(t *testing.T, mode covertdtls.Mode) webrtcfp.Features {
	t.Helper()
	c := covertdtls.Config{Mode: mode}
	r := webrtcfp.NewRelay(t)
	d, err := webrtcpeer.NewDialer(webrtcpeer.Config{LoopbackOnly: true, CovertDTLS: c})
	if err != nil {
		t.Fatal(err)
	}
	// The proxy's shared settings and its DTLS one (proxy/webrtc.go).
	se, shaper, err := webrtcnet.Peer{MaxMessageSize: webrtcpeer.MaxMessageSize, CovertDTLS: c, LoopbackOnly: true}.SettingEngine()
	if err != nil {
		t.Fatal(err)
	}
	se.SetDTLSInsecureSkipHelloVerify(true)
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(*se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	negotiate := func(ctx context.Context, offerJSON string) (string, error) {
		offer, err := messages.DecodeSessionDescription(offerJSON)
		if err != nil {
			return "", err
		}
		sdp, err := r.Rewrite(webrtcfp.Offerer, offer.SDP)
		if err != nil {
			return "", err
		}
		t.Cleanup(shaper.TrackRemote(sdp)) // as the proxy does
		if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: sdp}); err != nil {
			return "", err
		}
		local, err := webrtcnet.LocalDescription(ctx, pc, webrtc.SDPTypeAnswer, time.Minute, false)
		if err != nil {
			return "", err
		}
		sdp, err = r.Rewrite(webrtcfp.Answerer, local.SDP)
		if err != nil {
			return "", err
		}
		return messages.SessionDescription{Type: messages.SDPTypeAnswer, SDP: sdp}.Encode()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	p, err := d.Connect(ctx, negotiate, nil)
	if err != nil {
		t.Fatalf("%v: connect: %v", mode, err)
	}
	_ = p.Close()
	return webrtcfp.Extract(r.Datagrams())
}
