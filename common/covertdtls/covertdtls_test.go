package covertdtls_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"github.com/theodorsm/covert-dtls/pkg/fingerprints"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/webrtcnet"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		mode, fp string
		want     covertdtls.Mode
		err      error
	}{
		{"", "", covertdtls.Disable, nil},
		{"disable", "zz", covertdtls.Disable, nil}, // ignored when disabled, as Snowflake
		{"Mimic", "", covertdtls.Mimic, nil},
		{"randomize", "", covertdtls.Randomize, nil},
		{"RANDOMIZEMIMIC", "", covertdtls.RandomizeMimic, nil},
		{"mimic", string(fingerprints.Mozilla_Firefox_125_0_1), covertdtls.Mimic, nil},
		{"random", "", covertdtls.Disable, covertdtls.ErrMode},
		{"mimic", "zz", 0, covertdtls.ErrFingerprint},
		{"mimic", "fefd00", 0, covertdtls.ErrFingerprint},
	} {
		c, err := covertdtls.Parse(tc.mode, tc.fp)
		if !errors.Is(err, tc.err) {
			t.Errorf("Parse(%q, %.10q): %v, want %v", tc.mode, tc.fp, err, tc.err)
			continue
		}
		if err == nil && c.Mode != tc.want {
			t.Errorf("Parse(%q): mode %v, want %v", tc.mode, c.Mode, tc.want)
		}
		if err == nil && c.Mode.String() != map[covertdtls.Mode]string{0: "disable", 1: "mimic", 2: "randomize", 3: "randomizemimic"}[c.Mode] {
			t.Errorf("%v: bad String", c.Mode)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add("mimic", string(fingerprints.Mozilla_Firefox_125_0_1))
	f.Add("mimic", string(fingerprints.Chrome_linux_138_0_7204_183))
	f.Add("randomize", "fefd")
	f.Fuzz(func(t *testing.T, mode, fp string) {
		c, err := covertdtls.Parse(mode, fp)
		if err != nil {
			return
		}
		var se webrtc.SettingEngine
		if _, err := c.Apply(&se, nil); err != nil {
			t.Fatalf("Apply after a successful Parse: %v", err)
		}
	})
}

// TestHandshake opens a DataChannel between two pion peers with the mode
// on both sides (as in a chain), in both DTLS roles, several times (the
// random modes pick afresh each handshake).
func TestHandshake(t *testing.T) {
	cases := []covertdtls.Config{
		{Mode: covertdtls.Disable},
		{Mode: covertdtls.Mimic},
		{Mode: covertdtls.Randomize},
		{Mode: covertdtls.RandomizeMimic},
		{Mode: covertdtls.Mimic, Fingerprint: string(fingerprints.Mozilla_Firefox_125_0_1)},
	}
	for _, c := range cases {
		for _, role := range []webrtc.DTLSRole{webrtc.DTLSRoleClient, webrtc.DTLSRoleServer} {
			name := c.Mode.String()
			if c.Fingerprint != "" {
				name += "+fingerprint"
			}
			t.Run(name+"/answerer-"+role.String(), func(t *testing.T) {
				n := 3
				if c.Mode == covertdtls.Disable || c.Fingerprint != "" {
					n = 1
				}
				for range n {
					handshake(t, c, role)
				}
			})
		}
	}
}

func handshake(t *testing.T, c covertdtls.Config, answererRole webrtc.DTLSRole) {
	t.Helper()
	newPC := func(answer bool) *webrtc.PeerConnection {
		var se webrtc.SettingEngine
		webrtcnet.LoopbackOnly(&se, nil)
		if answer {
			if err := se.SetAnsweringDTLSRole(answererRole); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.Apply(&se, nil); err != nil {
			t.Fatal(err)
		}
		pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		return pc
	}
	offerer, answerer := newPC(false), newPC(true)
	dc, err := offerer.CreateDataChannel("x", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 1)
	answerer.OnDataChannel(func(d *webrtc.DataChannel) {
		d.OnMessage(func(m webrtc.DataChannelMessage) {
			select {
			case got <- string(m.Data):
			default:
			}
		})
	})
	opened := make(chan struct{})
	dc.OnOpen(func() { close(opened) })
	exchange(t, offerer, answerer)
	select {
	case <-opened:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v: DataChannel did not open", c.Mode)
	}
	if err := dc.SendText("hello"); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-got:
		if s != "hello" {
			t.Fatalf("got %q", s)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no message")
	}
}

// exchange runs a non-trickle offer/answer between two peers.
func exchange(t *testing.T, offerer, answerer *webrtc.PeerConnection) {
	t.Helper()
	local, err := webrtcnet.LocalDescription(context.Background(), offerer, webrtc.SDPTypeOffer, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := answerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: local.SDP}); err != nil {
		t.Fatal(err)
	}
	if local, err = webrtcnet.LocalDescription(context.Background(), answerer, webrtc.SDPTypeAnswer, time.Minute, false); err != nil {
		t.Fatal(err)
	}
	if err := offerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: local.SDP}); err != nil {
		t.Fatal(err)
	}
}
