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
// may do it with any client, whose nomination then arrives later.
//
// The peers may select different pairs, each of which works both ways, and
// ICE delivers what arrives on any pair; but the DTLS handshake then takes
// one 5-tuple out and another back, which no browser does, and a censor
// that admits DTLS flow by flow (one that allowlists browsers' hellos)
// drops the reply on the flow it saw no hello on. So the controlling
// peer's nomination always wins: a QuickPair selects the pair nominated
// last as soon as it works both ways, whatever its priority (pion's
// controlled agent moves only to a pair of higher priority, and keeps a
// pair a QuickPair selected). Snowflake's client nominates as pion does; a
// Flurry client that selects quickly nominates its pair afterwards with
// the checks of covertdtls's mimic.
//
// Relay (TURN) pairs are left to ICE's nomination and its wait for a
// better pair. A QuickPair serves one peer connection: install it on the
// SettingEngine of that connection's API only.
type QuickPair struct {
	enabled  atomic.Bool
	done     atomic.Bool // a pair was selected, by us or by nomination
	onSelect func()
	// On the ICE agent's loop only: the pair q selected last, and the
	// pair the controlling peer nominated last.
	selected, nominated *ice.CandidatePair
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

// Watch ends q's quick selection once pc's ICE transport selects a pair
// some other way, so that it never moves ICE's own selection; following
// nominations goes on.
func (q *QuickPair) Watch(pc *webrtc.PeerConnection) {
	pc.SCTP().Transport().ICETransport().OnSelectedCandidatePairChange(func(*webrtc.ICECandidatePair) {
		q.done.Store(true)
	})
}

// onBindingRequest runs on the ICE agent's loop after pion handled the
// request; true selects pair.
func (q *QuickPair) onBindingRequest(m *stun.Message, local, remote ice.Candidate, pair *ice.CandidatePair) bool {
	if m.Contains(stun.AttrUseCandidate) {
		// The controlling peer nominates: no quick selection from here on.
		q.done.Store(true)
		q.nominated = pair
	}
	if pair == nil || pair.ResponsesReceived() == 0 {
		return false
	}
	if q.nominated != nil {
		// Follow the nomination, on its request or, if the pair did not
		// work both ways then, on a later one (a pion client nominates
		// only until its check of the pair succeeds). Where pion selected
		// the pair itself, this selects it once more.
		if pair != q.nominated || pair == q.selected {
			return false
		}
		q.selected = pair
		return true
	}
	if !q.enabled.Load() || q.done.Load() ||
		local.Type() == ice.CandidateTypeRelay || remote.Type() == ice.CandidateTypeRelay {
		return false
	}
	if !q.done.CompareAndSwap(false, true) {
		return false
	}
	q.selected = pair
	if q.onSelect != nil {
		q.onSelect()
	}
	return true
}
