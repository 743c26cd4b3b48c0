package censor

import (
	"io"
	"slices"
	"testing"
	"time"

	"github.com/pion/logging"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/testkit/webrtcfp"
)

// TestDefaultBlockJA4WebRTCv5 connects two pion/webrtc v5 peers at their
// defaults (loopback only) through a recording relay and checks that the
// answerer's ClientHello (the DTLS client's, as a proxy's) is on
// DefaultBlockJA4: what Flurry's -covertdtls-config disable sends.
func TestDefaultBlockJA4WebRTCv5(t *testing.T) {
	r := webrtcfp.NewRelay(t)
	newPeer := func() *webrtc.PeerConnection {
		var se webrtc.SettingEngine
		se.LoggerFactory = &logging.DefaultLoggerFactory{Writer: io.Discard}
		webrtcnet.LoopbackOnly(&se, nil)
		pc, err := webrtc.NewAPI(webrtc.WithSettingEngine(se)).NewPeerConnection(webrtc.Configuration{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = pc.Close() })
		return pc
	}
	// describe sets pc's local description and returns it, with the
	// relay's address, once gathering is complete.
	describe := func(pc *webrtc.PeerConnection, side webrtcfp.Side, sd webrtc.SessionDescription, err error) webrtc.SessionDescription {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		done := webrtc.GatheringCompletePromise(pc)
		if err := pc.SetLocalDescription(sd); err != nil {
			t.Fatal(err)
		}
		<-done
		sdp, err := r.Rewrite(side, pc.LocalDescription().SDP)
		if err != nil {
			t.Fatal(err)
		}
		return webrtc.SessionDescription{Type: sd.Type, SDP: sdp}
	}
	offerer, answerer := newPeer(), newPeer()
	dc, err := offerer.CreateDataChannel("fp", nil)
	if err != nil {
		t.Fatal(err)
	}
	opened := make(chan struct{})
	dc.OnOpen(func() { close(opened) })
	sd, err := offerer.CreateOffer(nil)
	offer := describe(offerer, webrtcfp.Offerer, sd, err)
	if err := answerer.SetRemoteDescription(offer); err != nil {
		t.Fatal(err)
	}
	sd, err = answerer.CreateAnswer(nil)
	answer := describe(answerer, webrtcfp.Answerer, sd, err)
	if err := offerer.SetRemoteDescription(answer); err != nil {
		t.Fatal(err)
	}
	select {
	case <-opened:
	case <-time.After(time.Minute):
		t.Fatal("the DataChannel did not open")
	}
	var sent [][]byte
	for _, d := range r.Datagrams() {
		if d.From == webrtcfp.Answerer {
			sent = append(sent, d.Data)
		}
	}
	ja4, ok := JA4OfDatagrams(sent)
	if !ok {
		t.Fatal("no ClientHello from the answerer")
	}
	if !slices.Contains(DefaultBlockJA4(), ja4) {
		t.Errorf("pion/webrtc v5's hello has JA4 %s, not on DefaultBlockJA4 %v", ja4, DefaultBlockJA4())
	}
}
