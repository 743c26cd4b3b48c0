package messages

import (
	"encoding/json"
	"fmt"
)

// Proxy poll statuses (ProxyPollResponse.Status).
const (
	StatusClientMatch           = "client match"
	StatusNoMatch               = "no match"
	StatusIncorrectRelayPattern = "incorrect relay pattern"
)

// Proxy answer statuses (ProxyAnswerResponse.Status).
const (
	StatusSuccess    = "success"
	StatusClientGone = "client gone"
)

// ProxyPollRequest is what a proxy POSTs to the broker's /proxy endpoint.
//
// After DecodeProxyPollRequest succeeds, every field is safe as follows:
//
//   - Sid: passes ValidateSid; safe in logs and pages; not a metric label.
//   - Version: "1" or "1." followed by at most 14 of [A-Za-z0-9._-]; safe in
//     logs and pages; not a metric label (use ProxyVersion or a fixed set).
//   - Type: one of KnownProxyTypes or ProxyTypeUnknown; safe everywhere,
//     including metric labels.
//   - NAT: one of the three NAT constants; safe everywhere.
//   - Clients: 0..MaxClients.
//   - AcceptedRelayPattern: nil when the key is absent or null (a proxy
//     older than 1.3, which the broker must reject); otherwise at most
//     MaxRelayPatternLength bytes of printable ASCII without spaces, markup,
//     quotes or backslash: safe in logs and pages, not a metric label. Its
//     syntax is checked by common/relaypattern, not here.
type ProxyPollRequest struct {
	Sid                  string  `json:"Sid"`
	Version              string  `json:"Version"`
	Type                 string  `json:"Type"`
	NAT                  string  `json:"NAT"`
	Clients              int     `json:"Clients"`
	AcceptedRelayPattern *string `json:"AcceptedRelayPattern"`
}

func clampClients(n int) int {
	return min(max(n, 0), MaxClients)
}

// DecodeProxyPollRequest decodes and validates a proxy poll request of any
// version 1.x. Errors: ErrTooLarge, ErrMalformed (also bad JSON, matching
// *json.SyntaxError etc. with errors.As), ErrUnknownVersion (missing version
// or major version other than 1), ErrMissingSid, ErrInvalidSid, ErrInvalidNAT,
// ErrInvalidRelayPattern. The type is normalised with NormalizeProxyType,
// "" NAT becomes NATUnknown and Clients is clamped to 0..MaxClients.
func DecodeProxyPollRequest(b []byte) (ProxyPollRequest, error) {
	if err := checkBody(b); err != nil {
		return ProxyPollRequest{}, err
	}
	r, err := parseProxyPollRequest(b)
	if err != nil {
		return ProxyPollRequest{}, err
	}
	if err := checkProxyVersion(r.Version); err != nil {
		return ProxyPollRequest{}, err
	}
	if err := ValidateSid(r.Sid); err != nil {
		return ProxyPollRequest{}, err
	}
	nat, err := NormalizeNAT(r.NAT)
	if err != nil {
		return ProxyPollRequest{}, err
	}
	r.NAT = nat
	r.Type = NormalizeProxyType(r.Type)
	r.Clients = clampClients(r.Clients)
	if r.AcceptedRelayPattern != nil {
		if err := validateRelayPattern(*r.AcceptedRelayPattern); err != nil {
			return ProxyPollRequest{}, err
		}
	}
	return r, nil
}

// Encode serializes r as a version 1.3 request, whatever r.Version says:
//
//	{"Sid":"q0Dq3Cq4t2o0kB4QeWm2Vw","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":8,"AcceptedRelayPattern":"snowflake.torproject.net$"}
//
// Every key is always written; a nil AcceptedRelayPattern is written as null.
// Type is sent as given (it must be empty or a token of at most
// MaxProxyTypeLength bytes of [A-Za-z0-9._-]: the broker maps types it does
// not know to "unknown"), NAT as given (empty or one of the three), Clients
// clamped to 0..MaxClients.
func (r ProxyPollRequest) Encode() ([]byte, error) {
	if err := ValidateSid(r.Sid); err != nil {
		return nil, err
	}
	if len(r.Type) > MaxProxyTypeLength {
		return nil, ErrInvalidProxyType
	}
	for i := 0; i < len(r.Type); i++ {
		if !isTokenByte(r.Type[i]) {
			return nil, ErrInvalidProxyType
		}
	}
	if _, err := NormalizeNAT(r.NAT); err != nil {
		return nil, err
	}
	if r.AcceptedRelayPattern != nil {
		if err := validateRelayPattern(*r.AcceptedRelayPattern); err != nil {
			return nil, err
		}
	}
	r.Version = ProxyVersion
	r.Clients = clampClients(r.Clients)
	return json.Marshal(r)
}

// ProxyPollResponse is the broker's reply to a proxy poll.
//
//	{"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"...\"}","NAT":"unrestricted","NextPoll":20000,"RelayURL":"wss://snowflake.torproject.net/"}
//	{"Status":"no match","Offer":"","NAT":"","NextPoll":20000,"RelayURL":""}
//	{"Status":"incorrect relay pattern","Offer":"","NAT":"","NextPoll":3600000,"RelayURL":""}
//
// After DecodeProxyPollResponse (with a nil error or ErrIncorrectRelayPattern
// or ErrUnknownStatus), every field is safe as follows:
//
//   - Status: one of the three Status constants (safe everywhere), or, with
//     ErrUnknownStatus, at most MaxStatusLength bytes of printable ASCII
//     without markup: safe in logs and pages, not a metric label.
//   - Offer: empty unless Status is StatusClientMatch, then a valid session
//     description (DecodeSessionDescription): valid JSON without control
//     characters, but it holds IP addresses and may hold markup, so scrub it
//     before logging, escape it in pages, never use it as a label.
//   - NAT: the client's NAT type, one of the three constants ("" and any
//     value this package does not know become NATUnknown: a newer broker
//     may add types); safe everywhere.
//   - NextPoll: milliseconds until the next poll, 0..MaxNextPoll; 0 means
//     "not given".
//   - RelayURL: empty, or a ws:// or wss:// URL of at most MaxRelayURLLength
//     bytes of printable ASCII without spaces, markup, quotes or user
//     information: safe in logs and pages, not a metric label. Whether the
//     proxy may relay there is the proxy's decision.
type ProxyPollResponse struct {
	Status   string `json:"Status"`
	Offer    string `json:"Offer"`
	NAT      string `json:"NAT"`
	NextPoll int64  `json:"NextPoll"` // milliseconds
	RelayURL string `json:"RelayURL"`
}

func clampNextPoll(n int64) int64 {
	return min(max(n, 0), MaxNextPoll)
}

// DecodeProxyPollResponse decodes and validates a broker's poll response.
// Errors: ErrTooLarge, ErrMalformed, ErrEmptyResponse (no Status),
// ErrMissingOffer (client match without offer), ErrInvalidSessionDescription,
// ErrInvalidRelayURL. For "incorrect relay pattern" it returns
// the message and an error matching ErrIncorrectRelayPattern, so that the
// proxy can still honour NextPoll; for a status it does not know, the message
// and an error matching ErrUnknownStatus whose text quotes the status. In both
// cases Offer is cleared. Missing NAT, NextPoll and RelayURL are tolerated.
func DecodeProxyPollResponse(b []byte) (ProxyPollResponse, error) {
	if err := checkBody(b); err != nil {
		return ProxyPollResponse{}, err
	}
	r, err := parseProxyPollResponse(b)
	if err != nil {
		return ProxyPollResponse{}, err
	}
	if r.Status == "" {
		return ProxyPollResponse{}, ErrEmptyResponse
	}
	if nat, err := NormalizeNAT(r.NAT); err == nil {
		r.NAT = nat
	} else {
		r.NAT = NATUnknown
	}
	r.NextPoll = clampNextPoll(r.NextPoll)
	if r.RelayURL != "" {
		if err := validateRelayURL(r.RelayURL); err != nil {
			return ProxyPollResponse{}, err
		}
	}
	switch r.Status {
	case StatusClientMatch:
		if err := validateOffer(r.Offer); err != nil {
			return ProxyPollResponse{}, err
		}
		return r, nil
	case StatusNoMatch:
		r.Offer = ""
		return r, nil
	case StatusIncorrectRelayPattern:
		r.Offer = ""
		return r, ErrIncorrectRelayPattern
	}
	r.Offer = ""
	if len(r.Status) > MaxStatusLength || !isPlainText(r.Status, true) {
		return ProxyPollResponse{}, fmt.Errorf("%w: status not printable", ErrUnknownStatus)
	}
	return r, fmt.Errorf("%w: %q", ErrUnknownStatus, r.Status)
}

// Encode serializes r with every key, in the order Status, Offer, NAT,
// NextPoll, RelayURL. Status must be one of the three Status constants
// (ErrUnknownStatus); with StatusClientMatch, Offer must be a valid session
// description, and for other statuses Offer is written as "". NAT is written
// as given (empty or one of the three), NextPoll clamped to 0..MaxNextPoll,
// RelayURL empty or valid.
func (r ProxyPollResponse) Encode() ([]byte, error) {
	b, err := r.AppendEncode(make([]byte, 0, encodedSize(len(r.Status)+len(r.Offer)+len(r.NAT)+len(r.RelayURL))))
	if err != nil {
		return nil, err
	}
	return b, nil
}

// AppendEncode appends r, serialized and checked as by Encode, to dst and
// returns the extended buffer; on error, dst unchanged.
func (r ProxyPollResponse) AppendEncode(dst []byte) ([]byte, error) {
	switch r.Status {
	case StatusClientMatch:
		if err := validateOffer(r.Offer); err != nil {
			return dst, err
		}
	case StatusNoMatch, StatusIncorrectRelayPattern:
		r.Offer = ""
	default:
		return dst, ErrUnknownStatus
	}
	if _, err := NormalizeNAT(r.NAT); err != nil {
		return dst, err
	}
	if r.RelayURL != "" {
		if err := validateRelayURL(r.RelayURL); err != nil {
			return dst, err
		}
	}
	r.NextPoll = clampNextPoll(r.NextPoll)
	return r.appendMarshal(dst), nil
}

// ProxyAnswerRequest is what a proxy POSTs to the broker's /answer endpoint
// (and what the NAT probe server returns, with Sid "stub-sid").
//
//	{"Version":"1.3","Sid":"q0Dq3Cq4t2o0kB4QeWm2Vw","Answer":"{\"type\":\"answer\",\"sdp\":\"...\"}"}
//
// After DecodeProxyAnswerRequest succeeds: Version and Sid are as in
// ProxyPollRequest; Answer is a valid session description (see
// ProxyPollResponse.Offer for what that does and does not guarantee).
type ProxyAnswerRequest struct {
	Version string `json:"Version"`
	Sid     string `json:"Sid"`
	Answer  string `json:"Answer"`
}

// DecodeProxyAnswerRequest decodes and validates an answer request of any
// version 1.x. Errors: ErrTooLarge, ErrMalformed, ErrUnknownVersion,
// ErrMissingSid, ErrInvalidSid, ErrMissingAnswer,
// ErrInvalidSessionDescription.
func DecodeProxyAnswerRequest(b []byte) (ProxyAnswerRequest, error) {
	if err := checkBody(b); err != nil {
		return ProxyAnswerRequest{}, err
	}
	r, err := parseProxyAnswerRequest(b)
	if err != nil {
		return ProxyAnswerRequest{}, err
	}
	if err := r.validate(); err != nil {
		return ProxyAnswerRequest{}, err
	}
	return r, nil
}

func (r ProxyAnswerRequest) validate() error {
	if err := checkProxyVersion(r.Version); err != nil {
		return err
	}
	if err := ValidateSid(r.Sid); err != nil {
		return err
	}
	if r.Answer == "" {
		return ErrMissingAnswer
	}
	return checkSessionDescription(r.Answer)
}

// Encode serializes r as a version 1.3 request, whatever r.Version says.
func (r ProxyAnswerRequest) Encode() ([]byte, error) {
	r.Version = ProxyVersion
	if err := r.validate(); err != nil {
		return nil, err
	}
	return json.Marshal(r)
}

// ProxyAnswerResponse is the broker's reply to an answer request:
//
//	{"Status":"success"}
//	{"Status":"client gone"}
//
// After DecodeProxyAnswerResponse succeeds, Status is StatusSuccess or
// StatusClientGone.
type ProxyAnswerResponse struct {
	Status string `json:"Status"`
}

// DecodeProxyAnswerResponse decodes an answer response. Errors: ErrTooLarge,
// ErrMalformed, ErrEmptyResponse (no Status), ErrUnknownStatus (a status other
// than success and client gone; Snowflake's proxy treats those as "client
// gone").
func DecodeProxyAnswerResponse(b []byte) (ProxyAnswerResponse, error) {
	if err := checkBody(b); err != nil {
		return ProxyAnswerResponse{}, err
	}
	r, err := parseProxyAnswerResponse(b)
	if err != nil {
		return ProxyAnswerResponse{}, err
	}
	switch r.Status {
	case StatusSuccess, StatusClientGone:
		return r, nil
	case "":
		return ProxyAnswerResponse{}, ErrEmptyResponse
	}
	return ProxyAnswerResponse{}, ErrUnknownStatus
}

// Encode serializes r; Status must be StatusSuccess or StatusClientGone.
func (r ProxyAnswerResponse) Encode() ([]byte, error) {
	if r.Status != StatusSuccess && r.Status != StatusClientGone {
		return nil, ErrUnknownStatus
	}
	return json.Marshal(r)
}
