package webrtcnet

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
)

// newPeer is a peer connection of Peer's settings, changed by each of
// change.
func newPeer(t *testing.T, p Peer, change ...func(*webrtc.SettingEngine)) *webrtc.PeerConnection {
	t.Helper()
	se, _, err := p.SettingEngine()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range change {
		f(se)
	}
	pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(*se)).NewPeerConnection(webrtc.Configuration{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.GracefulClose() })
	return pc
}

// TestPeer: two loopback peers built from Peer connect, with a covert DTLS
// hello on one side, and carry a message over a detached DataChannel; both
// announce SCTP's INIT in their descriptions (SNAP), and with a peer that
// does not (Snowflake's, a browser) they connect all the same.
func TestPeer(t *testing.T) {
	for _, tt := range []struct {
		name string
		snap bool // whether the answerer knows SNAP
	}{
		{"SNAP", true},
		{"answerer without SNAP", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var change []func(*webrtc.SettingEngine)
			if !tt.snap {
				change = append(change, func(se *webrtc.SettingEngine) { se.EnableSctpSnap(false) })
			}
			testPeerPair(t, tt.snap, change...)
		})
	}
}

// testPeerPair connects an offerer built from Peer with an answerer built
// from Peer and changed by change; snap says whether the answer must carry
// SCTP's INIT.
func testPeerPair(t *testing.T, snap bool, change ...func(*webrtc.SettingEngine)) {
	offerer := newPeer(t, Peer{MaxMessageSize: 64 << 10, LoopbackOnly: true})
	answerer := newPeer(t, Peer{MaxMessageSize: 64 << 10, LoopbackOnly: true, CovertDTLS: covertdtls.Config{Mode: covertdtls.Mimic}}, change...)
	connectPair(t, offerer, answerer, func(offer, answer string) string {
		if !strings.Contains(offer, "a=sctp-init:") {
			t.Errorf("the offer announces no SCTP INIT:\n%s", offer)
		}
		if got := strings.Contains(answer, "a=sctp-init:"); got != snap {
			t.Errorf("the answer announces an SCTP INIT: %v, want %v", got, snap)
		}
		return answer
	})
}

// connectPair negotiates a DataChannel from offerer to answerer and sends
// "hello" over it. settle sees the offer and the answer and returns the
// answer the offerer is given.
func connectPair(t *testing.T, offerer, answerer *webrtc.PeerConnection, settle func(offer, answer string) string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // only against a hang
	defer cancel()
	dc, err := offerer.CreateDataChannel("test", nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan datachannel.ReadWriteCloser, 1)
	dc.OnOpen(func() {
		if raw, err := dc.Detach(); err == nil {
			opened <- raw
		}
	})
	received := make(chan []byte, 1)
	answerer.OnDataChannel(func(d *webrtc.DataChannel) {
		d.OnOpen(func() {
			raw, err := d.Detach()
			if err != nil {
				return
			}
			buf := make([]byte, 100)
			n, _ := raw.Read(buf)
			received <- buf[:n]
		})
	})
	offer, err := LocalDescription(ctx, offerer, webrtc.SDPTypeOffer, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	if err := answerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer.SDP}); err != nil {
		t.Fatal(err)
	}
	answer, err := LocalDescription(ctx, answerer, webrtc.SDPTypeAnswer, time.Minute, false)
	if err != nil {
		t.Fatal(err)
	}
	answerSDP := settle(offer.SDP, answer.SDP)
	if err := offerer.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answerSDP}); err != nil {
		t.Fatalf("the offerer refused the answer: %v", err)
	}
	select {
	case raw := <-opened:
		if _, err := raw.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("the DataChannel did not open")
	}
	select {
	case got := <-received:
		if !bytes.Equal(got, []byte("hello")) {
			t.Errorf("received %q", got)
		}
	case <-ctx.Done():
		t.Fatal("nothing received")
	}
}

// TestPeerBadCovertDTLS: a covert DTLS configuration that does not
// validate is an error.
func TestPeerBadCovertDTLS(t *testing.T) {
	_, _, err := Peer{CovertDTLS: covertdtls.Config{Mode: covertdtls.Mode(99)}}.SettingEngine()
	if err == nil || !errors.Is(err, covertdtls.ErrMode) {
		t.Errorf("mode 99: %v", err)
	}
}

// BenchmarkNewPeerConnection: what one peer connection with an API of its
// own (NewAPI, as the client and the proxy make them) allocates.
func BenchmarkNewPeerConnection(b *testing.B) {
	se, _, err := Peer{MaxMessageSize: 64 << 10, LoopbackOnly: true}.SettingEngine()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		pc, err := NewAPI(*se).NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			b.Fatal(err)
		}
		_ = pc.Close()
	}
}
