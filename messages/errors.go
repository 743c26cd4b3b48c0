package messages

import (
	"encoding/json"
	"errors"
)

// Sentinel errors returned (possibly wrapped) by the decoders and encoders.
// Test for them with errors.Is.
//
// The texts of ErrUnknownVersion, ErrMissingOffer, ErrInvalidFingerprint,
// ErrInvalidNAT and ErrInvalidSessionDescription are the texts Snowflake
// v2.14.1 sends to clients in ClientPollResponse.Error. DecodeClientPollRequest
// returns the first four unwrapped and ErrInvalidSessionDescription wrapped as
// "malformed session description: <reason>", and JSON syntax and type errors
// carry encoding/json's own text, so the broker can reply with
// ClientPollResponse{Error: err.Error()} and a Snowflake client sees exactly
// what a Snowflake broker would have said.
var (
	// ErrUnknownVersion: the message's version is not one this package
	// understands (proxy messages: major version other than 1; client
	// messages: framing version other than "1.0", or no framing).
	ErrUnknownVersion = errors.New("unsupported message version")

	// ErrInvalidNAT: a NAT type other than "", unknown, restricted and
	// unrestricted.
	ErrInvalidNAT = errors.New("invalid NAT type")

	// ErrMissingSid: a proxy message without a session id.
	ErrMissingSid = errors.New("no supplied session id")

	// ErrInvalidSid: a session id that is too long or has characters outside
	// the allowed alphabet (see ValidateSid).
	ErrInvalidSid = errors.New("invalid session id")

	// ErrMissingOffer: a client poll request, or a "client match" proxy poll
	// response, without an offer.
	ErrMissingOffer = errors.New("no supplied offer")

	// ErrMissingAnswer: a proxy answer request without an answer.
	ErrMissingAnswer = errors.New("no supplied answer")

	// ErrInvalidSessionDescription: an offer or answer that is not a valid
	// serialized session description (see DecodeSessionDescription).
	ErrInvalidSessionDescription = errors.New("malformed session description")

	// ErrInvalidFingerprint: a bridge fingerprint that is not 20 or 32 bytes
	// of hex.
	ErrInvalidFingerprint = errors.New("cannot decode fingerprint")

	// ErrMalformed: the body is not valid JSON of the right shape, is not
	// valid UTF-8, or a string field holds characters it may not hold.
	// JSON errors also match *json.SyntaxError or *json.UnmarshalTypeError
	// with errors.As.
	ErrMalformed = errors.New("malformed message")

	// ErrTooLarge: the body exceeds MaxBodySize or a field exceeds its
	// documented bound.
	ErrTooLarge = errors.New("message too large")

	// ErrEmptyResponse: a response with neither status, nor answer nor
	// error.
	ErrEmptyResponse = errors.New("received empty broker response")

	// ErrIncorrectRelayPattern: the broker rejected the proxy's
	// AcceptedRelayPattern. DecodeProxyPollResponse returns it together with
	// the decoded message so that the proxy can honour NextPoll.
	ErrIncorrectRelayPattern = errors.New(StatusIncorrectRelayPattern)

	// ErrUnknownStatus: a Status this package does not know.
	ErrUnknownStatus = errors.New("unknown status")

	// ErrInvalidRelayPattern: an AcceptedRelayPattern that is too long or
	// holds characters outside printable ASCII or markup characters.
	ErrInvalidRelayPattern = errors.New("invalid relay pattern")

	// ErrInvalidRelayURL: a RelayURL that is not a plain ws:// or wss:// URL
	// (see ProxyPollResponse).
	ErrInvalidRelayURL = errors.New("invalid relay URL")

	// ErrInvalidProxyType: returned only by encoders, for a Type that is not
	// a short token; decoders map every unknown type to ProxyTypeUnknown.
	ErrInvalidProxyType = errors.New("invalid proxy type")
)

// jsonError carries an encoding/json error. Its text is exactly the JSON
// error's text (as Snowflake reports it to clients); it matches ErrMalformed
// and the original error (*json.SyntaxError, *json.UnmarshalTypeError ...).
type jsonError struct{ err error }

func (e *jsonError) Error() string   { return e.err.Error() }
func (e *jsonError) Unwrap() []error { return []error{ErrMalformed, e.err} }

// unmarshal is json.Unmarshal with its error wrapped in a jsonError.
func unmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return &jsonError{err: err}
	}
	return nil
}
