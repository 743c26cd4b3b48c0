// Package event defines the hook through which the broker reports what it
// does, for metrics, geoip statistics and a status page (none of which live
// here).
//
// The broker calls a [Sink] synchronously from its request goroutines, so
// implementations must be safe for concurrent use and must not block (count,
// don't do I/O). Every value passed is already validated: Type and NAT come
// from fixed sets (messages.KnownProxyTypes plus "unknown"; the three NAT
// types), outcomes and reasons are enums with fixed String forms, and Addr is
// a parsed address (never logged by the broker unless unsafe logging is on).
// So a sink may use Type, NAT, Method and every String() as metric labels,
// but must bin or aggregate Addr (for example by country) before exposing it.
//
// Pairing: every ProxyPollStarted is followed by exactly one ProxyPollEnded
// for the same poll, so a gauge of waiting proxies can be kept with +1/-1.
// Polls refused before entering a pool are reported once, through
// ProxyPollRejected or RequestRejected.
package event

import "net/netip"

// Sink receives the broker's events. A nil Sink in the broker means Nop.
type Sink interface {
	// ProxyPollStarted: a valid poll entered a pool and is waiting.
	ProxyPollStarted(p Proxy)
	// ProxyPollEnded: a started poll ended with outcome o.
	ProxyPollEnded(p Proxy, o ProxyOutcome)
	// ProxyPollRejected: a well-formed poll was refused because of its relay
	// pattern (answered "incorrect relay pattern").
	ProxyPollRejected(p Proxy)
	// ClientPollEnded: a client request ended with outcome o. c.NAT is
	// "unknown" if the request was too malformed to carry one.
	ClientPollEnded(c Client, o ClientOutcome)
	// ProxyAnswered: an answer arrived. proxyType is "" when the client was
	// gone (the broker no longer knows which proxy it was).
	ProxyAnswered(proxyType string, o AnswerOutcome)
	// ProxyUnanswered: a proxy took a client's offer and had sent no answer
	// when the client's time budget ran out (the client's outcome is
	// ClientTimeout); the broker holds it against the proxy's address.
	ProxyUnanswered(proxyType string)
	// RequestRejected: a request to endpoint e was refused (wrong method,
	// too large, rate limited, malformed, duplicate Sid).
	RequestRejected(e Endpoint, r Reason, addr netip.Addr)
}

// Proxy describes one proxy poll.
type Proxy struct {
	Type         string     // proxy type, fixed set
	NAT          string     // unknown, restricted or unrestricted
	Addr         netip.Addr // the proxy's address
	RelayPattern bool       // the poll carried AcceptedRelayPattern
}

// Client describes one client request.
type Client struct {
	NAT    string     // unknown, restricted or unrestricted
	Addr   netip.Addr // the client's address (as seen by the broker)
	Method Method     // rendezvous method
	Legacy bool       // legacy bare-offer format
}

// Method is a rendezvous method.
type Method uint8

// Rendezvous methods (Snowflake's metric label values).
const (
	MethodHTTP Method = iota
	MethodAMPCache
	MethodSQS
)

func (m Method) String() string {
	switch m {
	case MethodHTTP:
		return "http"
	case MethodAMPCache:
		return "ampcache"
	case MethodSQS:
		return "sqs"
	}
	return "unknown"
}

// ProxyOutcome is how a started poll ended.
type ProxyOutcome uint8

// Proxy poll outcomes.
const (
	ProxyMatched ProxyOutcome = iota // got a client offer ("client match")
	ProxyIdle                        // hold time passed or broker shut down ("no match")
	ProxyGone                        // the proxy disconnected while waiting
)

func (o ProxyOutcome) String() string {
	switch o {
	case ProxyMatched:
		return "matched"
	case ProxyIdle:
		return "idle"
	case ProxyGone:
		return "gone"
	}
	return "unknown"
}

// ClientOutcome is how a client request ended.
type ClientOutcome uint8

// Client outcomes.
const (
	ClientMatched       ClientOutcome = iota // got an answer
	ClientDenied                             // no proxy available
	ClientTimeout                            // no answer within the time budget (or client left)
	ClientBadRequest                         // undecodable request or invalid field
	ClientUnknownBridge                      // fingerprint not in the bridge list
)

func (o ClientOutcome) String() string {
	switch o {
	case ClientMatched:
		return "matched"
	case ClientDenied:
		return "denied"
	case ClientTimeout:
		return "timeout"
	case ClientBadRequest:
		return "bad_request"
	case ClientUnknownBridge:
		return "unknown_bridge"
	}
	return "unknown"
}

// AnswerOutcome is how a proxy answer ended.
type AnswerOutcome uint8

// Answer outcomes.
const (
	AnswerSuccess    AnswerOutcome = iota // delivered to the waiting client
	AnswerClientGone                      // no client waiting on that Sid
)

func (o AnswerOutcome) String() string {
	switch o {
	case AnswerSuccess:
		return "success"
	case AnswerClientGone:
		return "client_gone"
	}
	return "unknown"
}

// Endpoint is a broker endpoint.
type Endpoint uint8

// Endpoints.
const (
	EndpointProxy Endpoint = iota
	EndpointClient
	EndpointAnswer
	EndpointAMP // GET /amp/client/
	EndpointSQS // SQS rendezvous (no HTTP request)
)

func (e Endpoint) String() string {
	switch e {
	case EndpointProxy:
		return "proxy"
	case EndpointClient:
		return "client"
	case EndpointAnswer:
		return "answer"
	case EndpointAMP:
		return "amp"
	case EndpointSQS:
		return "sqs"
	}
	return "unknown"
}

// Reason is why a request was refused.
type Reason uint8

// Rejection reasons.
const (
	ReasonMethod       Reason = iota // not POST or OPTIONS (405)
	ReasonTooLarge                   // body over the limit (413)
	ReasonRateLimited                // per-address or endpoint-wide rate limit exceeded (429)
	ReasonMalformed                  // body unreadable or not a valid message (400)
	ReasonDuplicateSid               // proxy poll with a Sid already waiting or matched (400)
)

func (r Reason) String() string {
	switch r {
	case ReasonMethod:
		return "method"
	case ReasonTooLarge:
		return "too_large"
	case ReasonRateLimited:
		return "rate_limited"
	case ReasonMalformed:
		return "malformed"
	case ReasonDuplicateSid:
		return "duplicate_sid"
	}
	return "unknown"
}

// Nop is a Sink that does nothing.
type Nop struct{}

func (Nop) ProxyPollStarted(Proxy)                       {}
func (Nop) ProxyPollEnded(Proxy, ProxyOutcome)           {}
func (Nop) ProxyPollRejected(Proxy)                      {}
func (Nop) ClientPollEnded(Client, ClientOutcome)        {}
func (Nop) ProxyAnswered(string, AnswerOutcome)          {}
func (Nop) ProxyUnanswered(string)                       {}
func (Nop) RequestRejected(Endpoint, Reason, netip.Addr) {}

// Tee returns a Sink that passes every event to each of sinks in order.
func Tee(sinks ...Sink) Sink { return tee(append([]Sink(nil), sinks...)) }

type tee []Sink

func (t tee) ProxyPollStarted(p Proxy) {
	for _, s := range t {
		s.ProxyPollStarted(p)
	}
}

func (t tee) ProxyPollEnded(p Proxy, o ProxyOutcome) {
	for _, s := range t {
		s.ProxyPollEnded(p, o)
	}
}

func (t tee) ProxyPollRejected(p Proxy) {
	for _, s := range t {
		s.ProxyPollRejected(p)
	}
}

func (t tee) ClientPollEnded(c Client, o ClientOutcome) {
	for _, s := range t {
		s.ClientPollEnded(c, o)
	}
}

func (t tee) ProxyAnswered(proxyType string, o AnswerOutcome) {
	for _, s := range t {
		s.ProxyAnswered(proxyType, o)
	}
}

func (t tee) ProxyUnanswered(proxyType string) {
	for _, s := range t {
		s.ProxyUnanswered(proxyType)
	}
}

func (t tee) RequestRejected(e Endpoint, r Reason, addr netip.Addr) {
	for _, s := range t {
		s.RequestRejected(e, r, addr)
	}
}
