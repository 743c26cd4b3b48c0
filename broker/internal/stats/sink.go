package stats

import (
	"net/netip"

	"github.com/flurrypt/flurry/broker/internal/event"
)

// Sink returns an event.Sink that records the broker's events in r:
//
//	ProxyPollStarted   ProxyPoll + AvailableProxies(+1)
//	ProxyPollEnded     AvailableProxies(-1), and ProxyPollResult for
//	                   matched and idle polls (not for gone or duplicate)
//	ProxyPollRejected  ProxyRejectedRelayPattern
//	ClientPollEnded    ClientPoll for matched, denied and timeout;
//	                   RequestRejected(malformed or unknown_bridge) otherwise
//	ProxyAnswered      ProxyAnswer
//	ProxyUnanswered    ProxyUnanswered
//	RequestRejected    RequestRejected (rate_limited goes to RateLimited)
func (r *Recorder) Sink() event.Sink { return sink{r} }

type sink struct{ r *Recorder }

func (s sink) ProxyPollStarted(p event.Proxy) {
	s.r.ProxyPoll(p.Addr, p.Type, p.NAT, p.RelayPattern)
	s.r.AvailableProxies(p.Type, p.NAT, +1)
}

func (s sink) ProxyPollEnded(p event.Proxy, o event.ProxyOutcome) {
	s.r.AvailableProxies(p.Type, p.NAT, -1)
	switch o {
	case event.ProxyMatched:
		s.r.ProxyPollResult(p.Type, p.NAT, true)
	case event.ProxyIdle:
		s.r.ProxyPollResult(p.Type, p.NAT, false)
	}
}

func (s sink) ProxyPollRejected(p event.Proxy) {
	s.r.ProxyRejectedRelayPattern(p.Type, p.NAT, p.RelayPattern)
}

func (s sink) ClientPollEnded(c event.Client, o event.ClientOutcome) {
	switch o {
	case event.ClientMatched:
		s.r.ClientPoll(c.Addr, c.NAT, c.Method.String(), StatusMatched)
	case event.ClientDenied:
		s.r.ClientPoll(c.Addr, c.NAT, c.Method.String(), StatusDenied)
	case event.ClientTimeout:
		s.r.ClientPoll(c.Addr, c.NAT, c.Method.String(), StatusTimeout)
	case event.ClientBadRequest:
		s.r.RequestRejected(clientEndpoint(c.Method), ReasonMalformed)
	case event.ClientUnknownBridge:
		s.r.RequestRejected(clientEndpoint(c.Method), ReasonUnknownBridge)
	}
}

// clientEndpoint is the endpoint a client's rendezvous method arrives on.
func clientEndpoint(m event.Method) string {
	switch m {
	case event.MethodAMPCache:
		return EndpointAMP
	case event.MethodSQS:
		return EndpointSQS
	}
	return EndpointClient
}

func (s sink) ProxyAnswered(proxyType string, o event.AnswerOutcome) {
	s.r.ProxyAnswer(proxyType, o == event.AnswerSuccess)
}

func (s sink) ProxyUnanswered(proxyType string) {
	s.r.ProxyUnanswered(proxyType)
}

func (s sink) RequestRejected(e event.Endpoint, why event.Reason, _ netip.Addr) {
	s.r.RequestRejected(e.String(), why.String())
}
