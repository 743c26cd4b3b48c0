package webrtcnet

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/sdp"
)

// ErrNoLocalDescription: the peer connection closed while gathering, so it
// has no local description to send.
var ErrNoLocalDescription = errors.New("no local description")

// Description is a local description ready to send.
type Description struct {
	// SDP is the description, without local-address candidates if they
	// were to be stripped.
	SDP string
	// Complete reports that ICE gathering finished before the deadline;
	// otherwise SDP carries the candidates found by then.
	Complete bool
	// AnyCandidate reports that gathering found at least one candidate,
	// stripped or not.
	AnyCandidate bool
}

// LocalDescription creates pc's offer or answer (typ), sets it as the
// local description, waits until ICE gathering completes or timeout
// passes, and returns the description to send with the candidates found by
// then (no trickle ICE, as Snowflake does), those on local addresses
// stripped if stripLocal (sdp.StripLocalCandidates). It returns ctx's
// error if ctx ends first.
func LocalDescription(ctx context.Context, pc *webrtc.PeerConnection, typ webrtc.SDPType, timeout time.Duration, stripLocal bool) (Description, error) {
	var desc webrtc.SessionDescription
	var err error
	switch typ {
	case webrtc.SDPTypeOffer:
		desc, err = pc.CreateOffer(nil)
	case webrtc.SDPTypeAnswer:
		desc, err = pc.CreateAnswer(nil)
	default:
		return Description{}, fmt.Errorf("create %s: not an offer or answer", typ)
	}
	if err != nil {
		return Description{}, fmt.Errorf("create %s: %w", typ, err)
	}
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(desc); err != nil {
		return Description{}, fmt.Errorf("set local description: %w", err)
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var d Description
	select {
	case <-gathered:
		d.Complete = true
	case <-t.C:
	case <-ctx.Done():
		return Description{}, ctx.Err()
	}
	local := pc.LocalDescription()
	if local == nil {
		return Description{}, ErrNoLocalDescription
	}
	d.SDP = local.SDP
	d.AnyCandidate = strings.Contains(d.SDP, "a=candidate:")
	if stripLocal {
		d.SDP = sdp.StripLocalCandidates(d.SDP)
	}
	return d, nil
}
