package webrtcnet

import (
	"sync/atomic"

	"github.com/pion/ice/v4"
	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v5"
)

// QuickPairAttribute is the session-level SDP attribute (a=flurry-quick-pair)
// with which a Flurry proxy's answer says that it selects a candidate pair
// as QuickPair does. A client that finds it in the answer does the same
// (QuickPair.Enable); a peer that does not know it ignores it.
const QuickPairAttribute = "flurry-quick-pair"

// QuickPair selects an ICE candidate pair as soon as the pair is known to
// work both ways: this peer's own check of it succeeded and a check of the
// other peer arrived on it.
//
// In ICE (RFC 8445) the controlled peer, the proxy, waits until the
// controlling one, the client, nominates a pair, and the client's pion
// nominates only at its next check tick (every 200 ms) and only then is
// connected: from the answer to the proxy's first DTLS flight it took two
// and a half round trips and a tick. With both peers selecting this way,
// the proxy starts DTLS when the client's first checks reach it, and the
// client is connected when the proxy's answering checks reach it: one
// round trip. A client may do it only with a proxy that announced it, as
// a standard proxy would wait for a nomination that never comes; a proxy
// may do it with any client, whose nomination then arrives later and moves
// the proxy to the nominated pair if that one has the higher priority.
// Either way the peers may end on different pairs, each of which works
// both ways, and ICE delivers what arrives on any pair.
//
// Relay (TURN) pairs are left to ICE's nomination and its wait for a
// better pair. A QuickPair serves one peer connection: install it on the
// SettingEngine of that connection's API only.
type QuickPair struct {
	enabled  atomic.Bool
	done     atomic.Bool // a pair was selected, by us or by nomination
	onSelect func()
}

// Install makes se's ICE agents consult q on every binding request.
func (q *QuickPair) Install(se *webrtc.SettingEngine) {
	se.SetICEBindingRequestHandler(q.onBindingRequest)
}

// Enable lets q select a pair; before, it only watches for a nomination.
// onSelect, if not nil, is called (on the ICE agent's loop) when q selects
// one.
func (q *QuickPair) Enable(onSelect func()) {
	q.onSelect = onSelect
	q.enabled.Store(true)
}

// Watch ends q's part once pc's ICE transport selects a pair some other
// way, so that q never moves a selection.
func (q *QuickPair) Watch(pc *webrtc.PeerConnection) {
	pc.SCTP().Transport().ICETransport().OnSelectedCandidatePairChange(func(*webrtc.ICECandidatePair) {
		q.done.Store(true)
	})
}

// onBindingRequest runs on the ICE agent's loop after pion handled the
// request; true selects pair.
func (q *QuickPair) onBindingRequest(m *stun.Message, local, remote ice.Candidate, pair *ice.CandidatePair) bool {
	if m.Contains(stun.AttrUseCandidate) {
		// The controlling peer nominates: ICE selects from here on.
		q.done.Store(true)
		return false
	}
	if !q.enabled.Load() || q.done.Load() || pair == nil || pair.ResponsesReceived() == 0 ||
		local.Type() == ice.CandidateTypeRelay || remote.Type() == ice.CandidateTypeRelay {
		return false
	}
	if !q.done.CompareAndSwap(false, true) {
		return false
	}
	if q.onSelect != nil {
		q.onSelect()
	}
	return true
}
