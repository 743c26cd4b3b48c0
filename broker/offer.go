package broker

import (
	"errors"
	"fmt"
	"strings"

	pionsdp "github.com/pion/sdp/v3"

	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/messages"
)

// Why a client's offer is refused before it reaches a proxy: a proxy given
// such an offer cannot answer it, and would be struck for it. Each reason is
// a fixed text that follows messages.ErrInvalidSessionDescription in the
// client's error reply (never anything taken from the offer).
var (
	errOfferType        = errors.New("not an offer")
	errOfferSyntax      = errors.New("SDP does not parse")
	errOfferNoData      = errors.New("no application media section with an SCTP transport")
	errOfferICE         = errors.New("missing or invalid ICE ufrag or pwd")
	errOfferFingerprint = errors.New("missing or invalid DTLS fingerprint")
	errOfferCandidates  = errors.New("no well-formed ICE candidate")
)

// checkOffer checks that a client's offer (a serialized session
// description, already decoded once by messages) is one a WebRTC proxy can
// answer: type "offer", SDP that parses, an m=application section over
// SCTP (the data channel), ICE credentials (session level, or in the media
// section pion takes them from: the BUNDLE master, else the first), and a
// DTLS fingerprint with a known hash and a digest of its length. Candidates
// are optional (a client may trickle none yet), but when that section has
// some, one must be well-formed, as pion requires. It returns the decoded
// description; the error wraps messages.ErrInvalidSessionDescription and
// carries a fixed reason.
func checkOffer(offer string) (messages.SessionDescription, error) {
	desc, err := messages.DecodeSessionDescription(offer)
	if err != nil {
		return desc, err // already "malformed session description: <fixed reason>"
	}
	if err := checkOfferSDP(desc); err != nil {
		return desc, fmt.Errorf("%w: %w", messages.ErrInvalidSessionDescription, err)
	}
	return desc, nil
}

func checkOfferSDP(desc messages.SessionDescription) error {
	if desc.Type != messages.SDPTypeOffer {
		return errOfferType
	}
	var s pionsdp.SessionDescription
	if err := s.UnmarshalString(desc.SDP); err != nil {
		return errOfferSyntax
	}
	data := false
	for _, m := range s.MediaDescriptions {
		if m.MediaName.Media == "application" && hasSCTP(m.MediaName.Protos) {
			data = true
			break
		}
	}
	if !data {
		return errOfferNoData
	}
	ice := candidateSection(&s)
	ufrag, okU := s.Attribute("ice-ufrag")
	pwd, okP := s.Attribute("ice-pwd")
	if !okU || ufrag == "" {
		ufrag, okU = ice.Attribute("ice-ufrag")
		pwd, okP = ice.Attribute("ice-pwd")
	}
	if !okU || !okP || !iceChars(ufrag, 4, 256) || !iceChars(pwd, 22, 256) {
		return errOfferICE
	}
	found := false
	for _, attrs := range [][]pionsdp.Attribute{s.Attributes, ice.Attributes} {
		for _, a := range attrs {
			if a.Key != "fingerprint" {
				continue
			}
			if !validFingerprint(a.Value) {
				return errOfferFingerprint
			}
			found = true
		}
	}
	if !found {
		return errOfferFingerprint
	}
	seen, valid := false, false
	for _, a := range ice.Attributes {
		if a.IsICECandidate() {
			seen = true
			_, ok := sdp.ParseCandidate(a.Value)
			valid = valid || ok
		}
	}
	if seen && !valid {
		return errOfferCandidates
	}
	return nil
}

// errAnswerCandidates: a proxy's answer without an ICE candidate, useless
// to a client that does not trickle ICE (Snowflake refuses it too).
var errAnswerCandidates = errors.New("answer has no ICE candidate")

// checkAnswer checks a proxy's answer (already a valid session description
// by messages) as POST /answer does before it reaches a client: it must
// hold an ICE candidate. The error is a fixed text.
func checkAnswer(answer string) error {
	if !strings.Contains(answer, "a=candidate") {
		return errAnswerCandidates
	}
	return nil
}

// candidateSection returns the media section pion reads ICE details from:
// the one whose mid is the first of a=group:BUNDLE, else the first. s has at
// least one.
func candidateSection(s *pionsdp.SessionDescription) *pionsdp.MediaDescription {
	if group, ok := s.Attribute("group"); ok {
		if f := strings.Fields(group); len(f) > 1 && f[0] == "BUNDLE" {
			for _, m := range s.MediaDescriptions {
				if mid, _ := m.Attribute("mid"); mid == f[1] {
					return m
				}
			}
		}
	}
	return s.MediaDescriptions[0]
}

func hasSCTP(protos []string) bool {
	for _, p := range protos {
		if p == "SCTP" {
			return true
		}
	}
	return false
}

// iceChars reports whether s is min to max ice-chars (RFC 8839: ALPHA,
// DIGIT, "+", "/").
func iceChars(s string, minLen, maxLen int) bool {
	if len(s) < minLen || len(s) > maxLen {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/') {
			return false
		}
	}
	return true
}

// fingerprintLen returns the digest length in bytes of a hash function a
// DTLS fingerprint may name (RFC 8122; case-insensitive), or 0.
func fingerprintLen(hash string) int {
	switch strings.ToLower(hash) {
	case "sha-1":
		return 20
	case "sha-224":
		return 28
	case "sha-256":
		return 32
	case "sha-384":
		return 48
	case "sha-512":
		return 64
	}
	return 0
}

// validFingerprint reports whether v is "<hash> XX:XX:..." with a known
// hash and a digest of its length in colon-separated hex pairs.
func validFingerprint(v string) bool {
	hash, digest, ok := strings.Cut(strings.TrimSpace(v), " ")
	n := fingerprintLen(hash)
	if !ok || n == 0 || len(digest) != 3*n-1 {
		return false
	}
	for i := range len(digest) {
		c := digest[i]
		if i%3 == 2 {
			if c != ':' {
				return false
			}
		} else if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
