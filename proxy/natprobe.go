package proxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/messages"
)

// ProbeNAT runs one NAT probe against Config.NATProbeURL with Snowflake's
// probe protocol and updates NATType:
//
//	proxy                                             probe server
//	  │ WebRTC offer with a DataChannel "test", all candidates gathered
//	  │ POST {"Status":"client match","Offer":"<offer>","NAT":"","NextPoll":0,"RelayURL":""}
//	  │───────────────────────────────────────────────────────────▶│
//	  │◀─ 200 {"Version":"1.3","Sid":"stub-sid","Answer":"<answer>"}┘
//	  │ DataChannel opens within NATProbeTimeout → "unrestricted",
//	  │ otherwise → "restricted"
//
// The probe server sits behind a restrictive NAT, so only a proxy whose own
// NAT lets the probe's packets in can connect. An HTTP or decoding error
// leaves the NAT type unchanged and is returned.
func (p *Proxy) ProbeNAT(ctx context.Context) (string, error) {
	if p.s.natProbe == nil {
		return p.NATType(), fmt.Errorf("%w: no probe URL configured", ErrNATProbe)
	}
	pc, err := p.newPeerConnection(nil)
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	defer pc.GracefulClose()
	dc, err := pc.CreateDataChannel("test", nil)
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	opened := make(chan struct{})
	var once sync.Once
	dc.OnOpen(func() { once.Do(func() { close(opened) }) })

	offerSDP, err := p.localDescription(ctx, pc, webrtc.SDPTypeOffer, p.s.NATProbeTimeout)
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	offerJSON, err := messages.SessionDescription{Type: messages.SDPTypeOffer, SDP: offerSDP}.Encode()
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	body, err := messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: offerJSON}.Encode()
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	reply, err := p.post(ctx, p.s.natProbe, body)
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	ans, err := messages.DecodeProxyAnswerRequest(reply)
	if err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	desc, err := messages.DecodeSessionDescription(ans.Answer)
	if err != nil || desc.Type != messages.SDPTypeAnswer {
		return p.NATType(), fmt.Errorf("%w: probe sent no answer", ErrNATProbe)
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: desc.SDP}); err != nil {
		return p.NATType(), fmt.Errorf("%w: %w", ErrNATProbe, err)
	}
	t := time.NewTimer(p.s.NATProbeTimeout)
	defer t.Stop()
	nat := messages.NATRestricted
	select {
	case <-opened:
		nat = messages.NATUnrestricted
	case <-t.C:
	case <-ctx.Done():
		return p.NATType(), ctx.Err()
	}
	p.setNAT(nat)
	return nat, nil
}
