package covertdtls

import (
	"bytes"
	"slices"
	"testing"

	"github.com/pion/stun/v4"
)

// pionRequest builds a binding request as pion/ice writes one: USERNAME,
// [USE-CANDIDATE,] ICE-CONTROLLING or ICE-CONTROLLED, PRIORITY,
// MESSAGE-INTEGRITY (keyed with pwd), FINGERPRINT.
func pionRequest(t testing.TB, username, pwd string, controlling, useCandidate bool) []byte {
	t.Helper()
	setters := []stun.Setter{stun.BindingRequest, stun.TransactionID, stun.NewUsername(username)}
	if useCandidate {
		setters = append(setters, stun.RawAttribute{Type: stun.AttrUseCandidate})
	}
	role := stun.AttrICEControlled
	if controlling {
		role = stun.AttrICEControlling
	}
	setters = append(setters,
		stun.RawAttribute{Type: role, Value: []byte{1, 2, 3, 4, 5, 6, 7, 8}},
		stun.RawAttribute{Type: stun.AttrPriority, Value: []byte{0x6e, 0, 0x1e, 0xff}},
		stun.NewShortTermIntegrity(pwd), stun.Fingerprint)
	m, err := stun.Build(setters...)
	if err != nil {
		t.Fatal(err)
	}
	return m.Raw
}

// attrOrder decodes b and returns its attribute types, checking its
// integrity with pwd and its fingerprint.
func attrOrder(t *testing.T, b []byte, pwd string) []stun.AttrType {
	t.Helper()
	m := &stun.Message{Raw: append([]byte(nil), b...)}
	if err := m.Decode(); err != nil {
		t.Fatal(err)
	}
	if err := stun.NewShortTermIntegrity(pwd).Check(m); err != nil {
		t.Fatalf("integrity: %v", err)
	}
	if err := stun.Fingerprint.Check(m); err != nil {
		t.Fatalf("fingerprint: %v", err)
	}
	var out []stun.AttrType
	for _, a := range m.Attributes {
		out = append(out, a.Type)
	}
	return out
}

func TestChromiumBinding(t *testing.T) {
	const sdp = "v=0\r\na=ice-ufrag:REMOTE\r\na=ice-pwd:remotepassword0123456789\r\n"
	const pwd = "remotepassword0123456789"
	sh := newShaper()
	release := sh.TrackRemote(sdp)
	defer release()

	controlled := sh.chromiumBinding(pionRequest(t, "REMOTE:local", pwd, false, false))
	want := []stun.AttrType{stun.AttrUsername, attrGoogNetworkInfo, stun.AttrICEControlled, stun.AttrPriority, stun.AttrMessageIntegrity, stun.AttrFingerprint}
	if got := attrOrder(t, controlled, pwd); !slices.Equal(got, want) {
		t.Errorf("controlled: %v, want %v", got, want)
	}

	// A controlling check before nomination keeps its lack of
	// USE-CANDIDATE; the nominating one is reordered; later keep-alive
	// checks to the same peer carry USE-CANDIDATE, as Chromium's do.
	before := sh.chromiumBinding(pionRequest(t, "REMOTE:local", pwd, true, false))
	want = []stun.AttrType{stun.AttrUsername, attrGoogNetworkInfo, stun.AttrICEControlling, stun.AttrPriority, stun.AttrMessageIntegrity, stun.AttrFingerprint}
	if got := attrOrder(t, before, pwd); !slices.Equal(got, want) {
		t.Errorf("controlling before nomination: %v, want %v", got, want)
	}
	want = []stun.AttrType{stun.AttrUsername, attrGoogNetworkInfo, stun.AttrICEControlling, stun.AttrUseCandidate, stun.AttrPriority, stun.AttrMessageIntegrity, stun.AttrFingerprint}
	for _, name := range []string{"nominating", "keep-alive after nomination"} {
		useCandidate := name == "nominating"
		got := attrOrder(t, sh.chromiumBinding(pionRequest(t, "REMOTE:local", pwd, true, useCandidate)), pwd)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}

	// Untouched: an untracked peer, anything not a binding request, and
	// every mode but mimic.
	for name, p := range map[string][]byte{
		"untracked peer": pionRequest(t, "OTHER:local", pwd, true, true),
		"DTLS record":    {22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1},
		"truncated STUN": pionRequest(t, "REMOTE:local", pwd, true, true)[:30],
	} {
		if got := sh.chromiumBinding(p); !bytes.Equal(got, p) {
			t.Errorf("%s was rewritten", name)
		}
	}
	var none *Shaper // every mode but mimic
	none.TrackRemote("a=ice-ufrag:RANDOM\r\na=ice-pwd:x\r\n")()

	release()
	p := pionRequest(t, "REMOTE:local", pwd, false, false)
	if got := sh.chromiumBinding(p); !bytes.Equal(got, p) {
		t.Error("a released peer's request was rewritten")
	}
	sh.mu.Lock()
	n := len(sh.peers)
	sh.mu.Unlock()
	if n != 0 {
		t.Errorf("%d peers still tracked", n)
	}
}

// TestShaperNominated: once a peer selected a pair without pion nominating
// one (webrtcnet.QuickPair), its controlling checks carry USE-CANDIDATE.
func TestShaperNominated(t *testing.T) {
	const sdp = "v=0\r\na=ice-ufrag:REMOTE\r\na=ice-pwd:remotepassword0123456789\r\n"
	const pwd = "remotepassword0123456789"
	sh := newShaper()
	defer sh.TrackRemote(sdp)()
	useCandidate := func() bool {
		return slices.Contains(attrOrder(t, sh.chromiumBinding(pionRequest(t, "REMOTE:local", pwd, true, false)), pwd), stun.AttrUseCandidate)
	}
	if useCandidate() {
		t.Fatal("a check before selection carries USE-CANDIDATE")
	}
	sh.Nominated(sdp)
	if !useCandidate() {
		t.Error("a check after Nominated lacks USE-CANDIDATE")
	}
	sh.Nominated("v=0\r\na=ice-ufrag:OTHER\r\n") // untracked: nothing
	var none *Shaper
	none.Nominated(sdp)
}

// FuzzChromiumShape feeds arbitrary datagrams to mimic's rewriting: it
// must not panic, and what it changes must be a valid STUN message.
func FuzzChromiumShape(f *testing.F) {
	const pwd = "fuzzpassword"
	sh := newShaper()
	sh.TrackRemote("a=ice-ufrag:FUZZ\r\na=ice-pwd:" + pwd + "\r\n")
	f.Add(pionRequest(f, "FUZZ:x", pwd, true, true))
	f.Add(pionRequest(f, "FUZZ:x", pwd, false, false))
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, p []byte) {
		in := append([]byte(nil), p...)
		out := sh.chromiumShape(p)
		if !bytes.Equal(p, in) {
			t.Fatal("input modified")
		}
		if bytes.Equal(out, p) || !isBindingRequest(p) {
			return
		}
		m := &stun.Message{Raw: out}
		if err := m.Decode(); err != nil {
			t.Fatalf("rewritten request does not decode: %v", err)
		}
		if err := stun.NewShortTermIntegrity(pwd).Check(m); err != nil {
			t.Fatalf("rewritten request's integrity: %v", err)
		}
	})
}
