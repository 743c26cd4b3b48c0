package covertdtls

import (
	"encoding/binary"
	"strings"
	"sync"

	"github.com/pion/stun/v4"
)

// Chromium's ICE connectivity checks differ from pion's in two features a
// censor can read without keys: Chromium sends GOOG-NETWORK-INFO (its
// network's id and cost) and orders the attributes USERNAME,
// GOOG-NETWORK-INFO, ICE-CONTROLLING/CONTROLLED, USE-CANDIDATE, PRIORITY,
// MESSAGE-INTEGRITY, FINGERPRINT; pion puts USE-CANDIDATE before
// ICE-CONTROLLING and sends no network info. pion/ice has no setting for
// either, so mimic rewrites its binding requests on the way out. Chromium
// also keeps USE-CANDIDATE on every check of a nominated pair, where pion
// drops it from its keep-alive checks; mimic adds it back once pion has
// nominated. (pion's first checks, before it nominates, still go without:
// adding it there would nominate aggressively, and a pion peer keeps the
// first pair nominated.) The
// MESSAGE-INTEGRITY of a request is keyed with the password of the peer it
// goes to, which only the session descriptions carry: the peer code
// registers the remote description (Shaper.TrackRemote) before ICE starts.

// attrGoogNetworkInfo is Chromium's GOOG-NETWORK-INFO attribute: network id
// and network cost, 16 bits each.
const attrGoogNetworkInfo stun.AttrType = 0xc057

// magicCookie is the fixed field of every STUN message (RFC 5389, 6).
const magicCookie = 0x2112a442

// googNetworkInfo is the value mimic sends: the first network Chromium
// numbers, with the cost of a wired network (0; Wi-Fi is 10).
var googNetworkInfo = []byte{0, 1, 0, 0}

// chromiumOrder is the order of the attributes Chromium writes before
// MESSAGE-INTEGRITY; any other attribute follows them, in pion's order.
var chromiumOrder = []stun.AttrType{
	stun.AttrUsername, attrGoogNetworkInfo, stun.AttrICEControlling, stun.AttrICEControlled,
	stun.AttrUseCandidate, stun.AttrPriority,
}

// remotePeer is what mimic knows of a tracked remote peer.
type remotePeer struct {
	pwd       string // its ICE password, the key of our requests' integrity
	nominated bool   // we, as controlling agent, nominated a pair to it
}

// Shaper is what mimic's network needs of the session descriptions: the
// ICE credentials of each remote peer, by username fragment. Apply makes
// one per SettingEngine; a nil Shaper tracks nothing.
type Shaper struct {
	mu    sync.Mutex
	peers map[string]*remotePeer // guarded by mu
}

func newShaper() *Shaper { return &Shaper{peers: map[string]*remotePeer{}} }

// TrackRemote registers the ICE credentials of a remote session
// description (SDP text), so that mimic can re-sign the binding requests
// sent to that peer; release forgets them and must be called when the
// peer connection closes. On a nil Shaper (every mode but mimic), or for a
// description without credentials, it does nothing.
func (sh *Shaper) TrackRemote(sdp string) (release func()) {
	ufrag, pwd := iceCredentials(sdp)
	if sh == nil || ufrag == "" || pwd == "" {
		return func() {}
	}
	sh.mu.Lock()
	sh.peers[ufrag] = &remotePeer{pwd: pwd}
	sh.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			sh.mu.Lock()
			delete(sh.peers, ufrag)
			sh.mu.Unlock()
		})
	}
}

// Nominated records that this peer, the controlling one, selected a pair
// to the remote peer of sdp without pion nominating one (as
// webrtcnet.QuickPair does), so that mimic's checks to that peer carry
// USE-CANDIDATE from now on, as Chromium's checks of its nominated pair do.
// On a nil Shaper, or for a peer not tracked, it does nothing.
func (sh *Shaper) Nominated(sdp string) {
	ufrag, _ := iceCredentials(sdp)
	if sh == nil || ufrag == "" {
		return
	}
	sh.mu.Lock()
	if peer, ok := sh.peers[ufrag]; ok {
		peer.nominated = true
	}
	sh.mu.Unlock()
}

// iceCredentials returns the first a=ice-ufrag and a=ice-pwd of sdp.
func iceCredentials(sdp string) (ufrag, pwd string) {
	for line := range strings.Lines(sdp) {
		line = strings.TrimRight(line, "\r\n")
		if v, ok := strings.CutPrefix(line, "a=ice-ufrag:"); ok && ufrag == "" {
			ufrag = v
		} else if v, ok := strings.CutPrefix(line, "a=ice-pwd:"); ok && pwd == "" {
			pwd = v
		}
	}
	return ufrag, pwd
}

// remotePeerOf returns the password of the tracked peer a binding request
// with this USERNAME ("remote:local") goes to, and whether it should carry
// USE-CANDIDATE: it does, or it is a controlling check to a peer we have
// nominated a pair to.
func (sh *Shaper) remotePeerOf(username string, controlling, useCandidate bool) (pwd string, nominate, ok bool) {
	ufrag, _, found := strings.Cut(username, ":")
	if !found {
		return "", false, false
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	peer, ok := sh.peers[ufrag]
	if !ok {
		return "", false, false
	}
	if controlling && useCandidate {
		peer.nominated = true
	}
	return peer.pwd, useCandidate || (controlling && peer.nominated), true
}

// isBindingRequest reports whether p starts like a STUN binding request.
func isBindingRequest(p []byte) bool {
	return len(p) >= 20 && binary.BigEndian.Uint16(p) == 0x0001 && binary.BigEndian.Uint32(p[4:]) == magicCookie
}

// chromiumBinding returns the binding request p rewritten as Chromium
// writes it, re-signed for its tracked peer, or p itself if p is not a
// binding request pion signed for a tracked peer.
func (sh *Shaper) chromiumBinding(p []byte) []byte {
	if !isBindingRequest(p) {
		return p
	}
	in := &stun.Message{Raw: append([]byte(nil), p...)}
	if err := in.Decode(); err != nil || !in.Contains(stun.AttrMessageIntegrity) || in.Contains(attrGoogNetworkInfo) {
		return p
	}
	var user stun.Username
	if err := user.GetFrom(in); err != nil {
		return p
	}
	pwd, nominate, ok := sh.remotePeerOf(user.String(), in.Contains(stun.AttrICEControlling), in.Contains(stun.AttrUseCandidate))
	if !ok {
		return p
	}
	out := &stun.Message{Type: in.Type, TransactionID: in.TransactionID}
	out.WriteHeader()
	added := map[stun.AttrType]bool{stun.AttrMessageIntegrity: true, stun.AttrFingerprint: true}
	for _, t := range chromiumOrder {
		switch v, err := in.Get(t); {
		case t == attrGoogNetworkInfo:
			out.Add(t, googNetworkInfo)
		case t == stun.AttrUseCandidate:
			if nominate {
				out.Add(t, nil)
			}
		case err == nil:
			out.Add(t, v)
		}
		added[t] = true
	}
	for _, a := range in.Attributes {
		if !added[a.Type] {
			out.Add(a.Type, a.Value)
		}
	}
	if err := stun.NewShortTermIntegrity(pwd).AddTo(out); err != nil {
		return p
	}
	if err := stun.Fingerprint.AddTo(out); err != nil {
		return p
	}
	return out.Raw
}
