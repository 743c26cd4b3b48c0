package webrtcnet

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/stun/v4"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/sdp"
)

// TestQuickPairRule: a QuickPair selects the first pair whose own check
// succeeded, once, only when enabled, never a relay pair, and not after a
// nomination; and it follows the controlling peer's nominations.
func TestQuickPairRule(t *testing.T) {
	host := func(port int) ice.Candidate {
		c, err := ice.NewCandidateHost(&ice.CandidateHostConfig{Network: "udp", Address: "192.0.2.1", Port: port, Component: 1})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	relay, err := ice.NewCandidateRelay(&ice.CandidateRelayConfig{Network: "udp", Address: "192.0.2.9", Port: 9, Component: 1, RelAddr: "192.0.2.1", RelPort: 1})
	if err != nil {
		t.Fatal(err)
	}
	checked := func(local, remote ice.Candidate) *ice.CandidatePair {
		p := &ice.CandidatePair{Local: local, Remote: remote}
		p.UpdateRoundTripTime(time.Millisecond) // a success response
		return p
	}
	request := func(t *testing.T, useCandidate bool) *stun.Message {
		setters := []stun.Setter{stun.BindingRequest, stun.TransactionID}
		if useCandidate {
			setters = append(setters, ice.UseCandidate())
		}
		m, err := stun.Build(setters...)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, c := host(1), host(2), host(3)
	unchecked := &ice.CandidatePair{Local: a, Remote: b}

	var q QuickPair
	if q.onBindingRequest(request(t, false), a, b, checked(a, b)) {
		t.Error("selected before Enable")
	}
	var selections int
	q.Enable(func() { selections++ })
	if q.onBindingRequest(request(t, false), a, b, unchecked) {
		t.Error("selected a pair whose own check has not succeeded")
	}
	if q.onBindingRequest(request(t, false), a, relay, checked(a, relay)) {
		t.Error("selected a relay pair")
	}
	if !q.onBindingRequest(request(t, false), a, b, checked(a, b)) {
		t.Error("did not select a pair that works both ways")
	}
	if q.onBindingRequest(request(t, false), a, c, checked(a, c)) {
		t.Error("moved its selection to a second pair")
	}
	if selections != 1 {
		t.Errorf("onSelect called %d times, want 1", selections)
	}

	// The controlling peer's nomination wins over q's own selection.
	var f QuickPair
	f.Enable(nil)
	ab, ac, ad := checked(a, b), checked(a, c), &ice.CandidatePair{Local: a, Remote: host(4)}
	if !f.onBindingRequest(request(t, false), a, b, ab) {
		t.Fatal("did not select a pair that works both ways")
	}
	if f.onBindingRequest(request(t, true), a, b, ab) {
		t.Error("selected its own pair again when it was nominated")
	}
	if !f.onBindingRequest(request(t, true), a, c, ac) {
		t.Error("did not follow a nomination of another pair")
	}
	if f.onBindingRequest(request(t, true), a, c, ac) || f.onBindingRequest(request(t, false), a, b, ab) {
		t.Error("moved again without a new nomination")
	}
	if f.onBindingRequest(request(t, true), a, ad.Remote, ad) {
		t.Error("followed a nomination of a pair whose own check has not succeeded")
	}
	ad.UpdateRoundTripTime(time.Millisecond)
	if !f.onBindingRequest(request(t, false), a, ad.Remote, ad) {
		t.Error("did not follow the nominated pair once it worked both ways")
	}

	// Without a selection of its own, q selects each newly nominated pair
	// once (pion may have selected it already), and nothing else.
	var n QuickPair
	n.Enable(nil)
	if !n.onBindingRequest(request(t, true), a, b, ab) || n.onBindingRequest(request(t, true), a, b, ab) {
		t.Error("did not select a nominated pair exactly once")
	}
	if n.onBindingRequest(request(t, false), a, c, ac) {
		t.Error("selected quickly after a nomination")
	}
	if !n.onBindingRequest(request(t, true), a, relay, checked(a, relay)) {
		t.Error("did not follow a nomination of a relay pair")
	}
}

// TestQuickPairConnects: peers connect whether both select quickly (the
// client enabled by the answer's attribute), only the answerer does (a
// Snowflake client with a Flurry proxy), or the answerer does not and so
// does not announce it (a Flurry client with a Snowflake proxy).
func TestQuickPairConnects(t *testing.T) {
	for _, tt := range []struct {
		name     string
		answerer bool // the answerer selects quickly and announces it
		offerer  bool // the offerer installs a QuickPair
	}{
		{"both", true, true},
		{"answerer only", true, false},
		{"offerer without an announcing answerer", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			testQuickPair(t, tt.answerer, tt.offerer)
		})
	}
}

func testQuickPair(t *testing.T, answererQuick, offererQuick bool) {
	// quickPeer is newPeer with q installed; selected counts q's
	// selections, nominated the nominations its peer received.
	var selected, nominated atomic.Int32
	quickPeer := func(q *QuickPair) *webrtc.PeerConnection {
		if q == nil {
			return newPeer(t, Peer{MaxMessageSize: 64 << 10, LoopbackOnly: true})
		}
		pc := newPeer(t, Peer{MaxMessageSize: 64 << 10, LoopbackOnly: true}, func(se *webrtc.SettingEngine) {
			se.SetICEBindingRequestHandler(func(m *stun.Message, local, remote ice.Candidate, pair *ice.CandidatePair) bool {
				if m.Contains(stun.AttrUseCandidate) {
					nominated.Add(1)
				}
				ok := q.onBindingRequest(m, local, remote, pair)
				if ok {
					selected.Add(1)
				}
				return ok
			})
		})
		q.Watch(pc)
		return pc
	}
	var offererQ, answererQ *QuickPair
	if offererQuick {
		offererQ = new(QuickPair)
	}
	if answererQuick {
		answererQ = new(QuickPair)
		answererQ.Enable(nil)
	}
	offerer, answerer := quickPeer(offererQ), quickPeer(answererQ)
	connectPair(t, offerer, answerer, func(_, answer string) string {
		if answererQuick {
			answer = sdp.AddSessionAttribute(answer, QuickPairAttribute)
		}
		if offererQuick && sdp.HasSessionAttribute(answer, QuickPairAttribute) {
			offererQ.Enable(nil)
		}
		return answer
	})
	t.Logf("quick selections %d, nominations received %d", selected.Load(), nominated.Load())
}
