package messages

import (
	"bytes"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Well-known ClientPollResponse.Error texts sent by Snowflake's broker.
const (
	StrNoProxies     = "no snowflake proxies currently available"
	StrTimedOut      = "timed out waiting for answer!"
	StrUnknownBridge = "bridge with requested fingerprint is unknown to the broker"
)

// ClientPollRequest is what a client sends to the broker (POST /client, or
// through the AMP cache or SQS), framed as the version, a line feed and JSON:
//
//	 0   1   2   3    4
//	+---+---+---+----+------------------------------------------------+
//	| 1 | . | 0 | LF | {"offer":"...","nat":"...","fingerprint":"..."} |
//	+---+---+---+----+------------------------------------------------+
//
// After a decoder succeeds, every field is safe as follows:
//
//   - Offer: a valid session description (see ProxyPollResponse.Offer: holds
//     IP addresses and possibly markup; never log it unscrubbed, never a
//     metric label).
//   - NAT: one of the three NAT constants; safe everywhere.
//   - Fingerprint: 40 or 64 hex digits, case as received (default
//     DefaultBridgeFingerprint); safe in logs and pages; not a metric label
//     (client-chosen, unbounded set). Use ParseFingerprint for the bytes.
type ClientPollRequest struct {
	Offer       string `json:"offer"`
	NAT         string `json:"nat"`
	Fingerprint string `json:"fingerprint"`
}

var clientPrefix = []byte(ClientVersion + "\n")

// DecodeClientPollRequest decodes and validates a "1.0\n{json}" client poll
// request. The version must be exactly "1.0" before the first line feed;
// whitespace before the JSON is tolerated; missing nat and fingerprint become
// NATUnknown and DefaultBridgeFingerprint.
//
// The checks run in Snowflake's order and err.Error() is exactly the text a
// Snowflake broker puts in ClientPollResponse.Error: "unsupported message
// version" (ErrUnknownVersion), encoding/json's text for bad JSON
// (ErrMalformed), "no supplied offer" (ErrMissingOffer), "malformed session
// description: <reason>" (ErrInvalidSessionDescription), "cannot decode
// fingerprint" (ErrInvalidFingerprint), "invalid NAT type" (ErrInvalidNAT).
// Other errors: ErrTooLarge, ErrMalformed for invalid UTF-8.
func DecodeClientPollRequest(b []byte) (ClientPollRequest, error) {
	if err := checkBody(b); err != nil {
		return ClientPollRequest{}, err
	}
	version, body, ok := bytes.Cut(b, []byte{'\n'})
	if !ok || string(version) != ClientVersion {
		return ClientPollRequest{}, ErrUnknownVersion
	}
	r, err := parseClientPollRequest(body)
	if err != nil {
		return ClientPollRequest{}, err
	}
	if r.Fingerprint == "" {
		r.Fingerprint = DefaultBridgeFingerprint
	}
	if err := r.validate(); err != nil {
		return ClientPollRequest{}, err
	}
	r.NAT, _ = NormalizeNAT(r.NAT)
	return r, nil
}

// validate checks the fields in Snowflake's order. Fingerprint must be
// filled in.
func (r ClientPollRequest) validate() error {
	if err := validateOffer(r.Offer); err != nil {
		return err
	}
	if _, err := ParseFingerprint(r.Fingerprint); err != nil {
		return err
	}
	_, err := NormalizeNAT(r.NAT)
	return err
}

// IsLegacyClientPoll reports whether a /client body is in the legacy format
// (the bare offer JSON, no version line): its first byte is '{'.
func IsLegacyClientPoll(b []byte) bool {
	return len(b) > 0 && b[0] == '{'
}

// DecodeLegacyClientPoll decodes a legacy /client body: the body is the offer
// itself, the NAT type comes from the Snowflake-NAT-Type header (natHeader,
// "" when absent) and the fingerprint is DefaultBridgeFingerprint. Errors and
// guarantees are those of DecodeClientPollRequest.
func DecodeLegacyClientPoll(b []byte, natHeader string) (ClientPollRequest, error) {
	if err := checkBody(b); err != nil {
		return ClientPollRequest{}, err
	}
	r := ClientPollRequest{Offer: string(b), NAT: natHeader, Fingerprint: DefaultBridgeFingerprint}
	if err := r.validate(); err != nil {
		return ClientPollRequest{}, err
	}
	r.NAT, _ = NormalizeNAT(r.NAT)
	return r, nil
}

// Encode serializes r as "1.0\n" followed by the JSON object with all three
// keys in the order offer, nat, fingerprint. An empty Fingerprint is sent as
// DefaultBridgeFingerprint; NAT is sent as given (empty or one of the three).
// Offer must be a valid session description.
func (r ClientPollRequest) Encode() ([]byte, error) {
	if r.Fingerprint == "" {
		r.Fingerprint = DefaultBridgeFingerprint
	}
	if err := r.validate(); err != nil {
		return nil, err
	}
	body, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(clientPrefix)+len(body))
	out = append(out, clientPrefix...)
	return append(out, body...), nil
}

// ClientPollResponse is the broker's reply to a client poll: either the
// proxy's answer or an error text (both keys omitted when empty):
//
//	{"answer":"{\"type\":\"answer\",\"sdp\":\"...\"}"}
//	{"error":"no snowflake proxies currently available"}
//
// After DecodeClientPollResponse succeeds: Answer is empty or a valid session
// description (see ProxyPollResponse.Offer); Error is at most MaxErrorLength
// bytes of valid UTF-8 without control characters: safe in a log line, but
// it may hold quotes and markup (escape it in pages) and is not a metric
// label (compare it with StrNoProxies, StrTimedOut ... instead).
type ClientPollResponse struct {
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// DecodeClientPollResponse decodes and validates a broker's reply to a
// client. Errors: ErrTooLarge, ErrMalformed (bad JSON, or an Error text that
// is too long or has control characters), ErrEmptyResponse (neither answer nor
// error), ErrInvalidSessionDescription.
func DecodeClientPollResponse(b []byte) (ClientPollResponse, error) {
	if err := checkBody(b); err != nil {
		return ClientPollResponse{}, err
	}
	r, err := parseClientPollResponse(b)
	if err != nil {
		return ClientPollResponse{}, err
	}
	if err := r.validate(); err != nil {
		return ClientPollResponse{}, err
	}
	return r, nil
}

func (r ClientPollResponse) validate() error {
	if r.Answer == "" && r.Error == "" {
		return ErrEmptyResponse
	}
	if len(r.Error) > MaxErrorLength {
		return fmt.Errorf("%w: error text longer than %d bytes", ErrTooLarge, MaxErrorLength)
	}
	if !utf8.ValidString(r.Error) || hasControl(r.Error) {
		return fmt.Errorf("%w: control character in error text", ErrMalformed)
	}
	if r.Answer != "" {
		if err := checkSessionDescription(r.Answer); err != nil {
			return err
		}
	}
	return nil
}

// Encode serializes r; empty fields are omitted. At least one of Answer and
// Error must be set (ErrEmptyResponse); Answer must be a valid session
// description and Error valid UTF-8 without control characters.
func (r ClientPollResponse) Encode() ([]byte, error) {
	b, err := r.AppendEncode(make([]byte, 0, encodedSize(len(r.Answer)+len(r.Error))))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AppendEncode appends r, serialized and checked as by Encode, to dst and
// returns the extended buffer; on error, dst unchanged.
func (r ClientPollResponse) AppendEncode(dst []byte) ([]byte, error) {
	if err := r.validate(); err != nil {
		return dst, err
	}
	return r.appendMarshal(dst), nil
}
