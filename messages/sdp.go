package messages

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// Session description types (the values of the "type" key).
const (
	SDPTypeOffer    = "offer"
	SDPTypeAnswer   = "answer"
	SDPTypePranswer = "pranswer"
	SDPTypeRollback = "rollback"
)

// The reasons of a malformed session description, worded as Snowflake's
// (a Snowflake client reads "malformed session description: <reason>").
var (
	errSDPNoType        = errors.New("cannot deserialize SessionDescription without type field")
	errSDPNoSDP         = errors.New("cannot deserialize SessionDescription without sdp field")
	errSDPTypeNotString = errors.New("invalid SDP type")
	errSDPNotString     = errors.New("invalid SDP")
	//lint:ignore ST1005 Snowflake's text, capital included
	errSDPUnknownType = errors.New("Unknown SDP type")
)

// SessionDescription is a WebRTC session description as Snowflake serializes
// it (pion's JSON form):
//
//	{"type":"offer","sdp":"v=0\r\no=- 7207834799972382898 ..."}
//
// Type is one of offer, answer, pranswer and rollback. SDP is the SDP text
// itself: valid UTF-8 but otherwise unchecked here (the WebRTC stack parses
// it). SDP contains raw CR LF line breaks and IP addresses: it is not safe
// for log lines (scrub it with common/safelog and quote it), metric labels or
// pages (escape it).
type SessionDescription struct {
	Type string `json:"type"`
	SDP  string `json:"sdp"`
}

func validSDPType(t string) bool {
	switch t {
	case SDPTypeOffer, SDPTypeAnswer, SDPTypePranswer, SDPTypeRollback:
		return true
	}
	return false
}

// DecodeSessionDescription parses a serialized session description. s must be
// at most MaxSessionDescriptionLength bytes of valid UTF-8 without control
// characters (so no whitespace other than spaces between JSON tokens; Go and
// browsers never write any), a JSON object with a string "type" (one of the
// four types) and a string "sdp" (may be empty). Keys are matched exactly
// ("Type" and "SDP" are not keys of a session description) and unknown keys
// ignored, as Snowflake's decoder does: a key that only folds onto "type" or
// "sdp" would pass here and fail at every Snowflake peer. Every
// failure wraps ErrInvalidSessionDescription; the text is "malformed session
// description: <reason>".
func DecodeSessionDescription(s string) (SessionDescription, error) {
	return decodeSessionDescription(s, true)
}

// checkSessionDescription is DecodeSessionDescription for validation only:
// the same checks and errors, without building the SDP text.
func checkSessionDescription(s string) error {
	_, err := decodeSessionDescription(s, false)
	return err
}

// decodeSessionDescription implements DecodeSessionDescription; without
// keepSDP the result's SDP is left empty (when the fast path takes s).
func decodeSessionDescription(s string, keepSDP bool) (SessionDescription, error) {
	if len(s) > MaxSessionDescriptionLength {
		return SessionDescription{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidSessionDescription, MaxSessionDescriptionLength)
	}
	if !utf8.ValidString(s) {
		return SessionDescription{}, fmt.Errorf("%w: invalid UTF-8", ErrInvalidSessionDescription)
	}
	if hasControl(s) {
		return SessionDescription{}, fmt.Errorf("%w: control character", ErrInvalidSessionDescription)
	}
	typ, sdp, err := parseSessionDescription(s, keepSDP)
	if err != nil {
		return SessionDescription{}, fmt.Errorf("%w: %w", ErrInvalidSessionDescription, err)
	}
	if !validSDPType(typ) {
		return SessionDescription{}, fmt.Errorf("%w: %w", ErrInvalidSessionDescription, errSDPUnknownType)
	}
	return SessionDescription{Type: typ, SDP: sdp}, nil
}

// Encode serializes d as Go's encoding/json (and so Snowflake) writes it:
// {"type":"...","sdp":"..."}, with <, > and & escaped as \u003c etc. It fails
// with ErrInvalidSessionDescription for an unknown type, invalid UTF-8, or a
// result longer than MaxSessionDescriptionLength.
func (d SessionDescription) Encode() (string, error) {
	if !validSDPType(d.Type) {
		return "", fmt.Errorf("%w: unknown type", ErrInvalidSessionDescription)
	}
	if !utf8.ValidString(d.SDP) {
		return "", fmt.Errorf("%w: invalid UTF-8", ErrInvalidSessionDescription)
	}
	b, err := json.Marshal(d)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrInvalidSessionDescription, err)
	}
	if len(b) > MaxSessionDescriptionLength {
		return "", fmt.Errorf("%w: longer than %d bytes", ErrInvalidSessionDescription, MaxSessionDescriptionLength)
	}
	return string(b), nil
}
