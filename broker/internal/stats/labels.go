package stats

import "github.com/flurrypt/flurry/messages"

// Every label value the Recorder exports comes from one of the fixed sets
// below. Each set has an index type; the *Index functions map any string to
// an index, sending everything outside the set to the set's catch-all
// ("unknown", "other" or "??"), so that no caller, buggy or not, can create
// a label value of its own.

// typeIdx indexes proxy types: messages.KnownProxyTypes order, then unknown.
type typeIdx uint8

const numTypes = 6

const typeUnknown typeIdx = numTypes - 1

func typeIndex(s string) typeIdx {
	switch s {
	case messages.ProxyTypeStandalone:
		return 0
	case messages.ProxyTypeWebExt:
		return 1
	case messages.ProxyTypeBadge:
		return 2
	case messages.ProxyTypeIPTProxy:
		return 3
	case messages.ProxyTypeBloco:
		return 4
	}
	return typeUnknown
}

func (t typeIdx) String() string {
	switch t {
	case 0:
		return messages.ProxyTypeStandalone
	case 1:
		return messages.ProxyTypeWebExt
	case 2:
		return messages.ProxyTypeBadge
	case 3:
		return messages.ProxyTypeIPTProxy
	case 4:
		return messages.ProxyTypeBloco
	}
	return messages.ProxyTypeUnknown
}

// natIdx indexes NAT types in the order of Snowflake's descriptor lines.
type natIdx uint8

const numNATs = 3

const (
	natRestricted natIdx = iota
	natUnrestricted
	natUnknown
)

func natIndex(s string) natIdx {
	switch s {
	case messages.NATRestricted:
		return natRestricted
	case messages.NATUnrestricted:
		return natUnrestricted
	}
	return natUnknown
}

func (n natIdx) String() string {
	switch n {
	case natRestricted:
		return messages.NATRestricted
	case natUnrestricted:
		return messages.NATUnrestricted
	}
	return messages.NATUnknown
}

// Client poll statuses.
const (
	StatusMatched = "matched" // the client got a proxy's answer
	StatusDenied  = "denied"  // no proxy was available
	StatusTimeout = "timeout" // a proxy was assigned but no answer came in time
)

type statusIdx uint8

const (
	statusMatched statusIdx = iota
	statusDenied
	statusTimeout
	statusOther
)

func statusIndex(s string) statusIdx {
	switch s {
	case StatusMatched:
		return statusMatched
	case StatusDenied:
		return statusDenied
	case StatusTimeout:
		return statusTimeout
	}
	return statusOther
}

func (s statusIdx) String() string {
	switch s {
	case statusMatched:
		return StatusMatched
	case statusDenied:
		return StatusDenied
	case statusTimeout:
		return StatusTimeout
	}
	return "other"
}

// Rendezvous methods (Snowflake's names).
const (
	MethodHTTP     = "http"
	MethodAMPCache = "ampcache"
	MethodSQS      = "sqs"
)

type methodIdx uint8

const (
	methodHTTP methodIdx = iota
	methodAMPCache
	methodSQS
	methodUnknown
)

// numDescriptorMethods is how many methods have descriptor lines (all but
// unknown).
const numDescriptorMethods = 3

func methodIndex(s string) methodIdx {
	switch s {
	case MethodHTTP:
		return methodHTTP
	case MethodAMPCache:
		return methodAMPCache
	case MethodSQS:
		return methodSQS
	}
	return methodUnknown
}

func (m methodIdx) String() string {
	switch m {
	case methodHTTP:
		return MethodHTTP
	case methodAMPCache:
		return MethodAMPCache
	case methodSQS:
		return MethodSQS
	}
	return "unknown"
}

// Endpoints, the values of the endpoint label.
const (
	EndpointProxy      = "proxy"
	EndpointClient     = "client"
	EndpointAnswer     = "answer"
	EndpointAMP        = "amp"
	EndpointSQS        = "sqs"
	EndpointDebug      = "debug"
	EndpointMetrics    = "metrics"
	EndpointPrometheus = "prometheus"
	EndpointStatus     = "status"
	EndpointRobots     = "robots"
)

type endpointIdx uint8

const numEndpoints = 11

const endpointOther endpointIdx = numEndpoints - 1

func endpointIndex(s string) endpointIdx {
	switch s {
	case EndpointProxy:
		return 0
	case EndpointClient:
		return 1
	case EndpointAnswer:
		return 2
	case EndpointAMP:
		return 3
	case EndpointSQS:
		return 4
	case EndpointDebug:
		return 5
	case EndpointMetrics:
		return 6
	case EndpointPrometheus:
		return 7
	case EndpointStatus:
		return 8
	case EndpointRobots:
		return 9
	}
	return endpointOther
}

func (e endpointIdx) String() string {
	switch e {
	case 0:
		return EndpointProxy
	case 1:
		return EndpointClient
	case 2:
		return EndpointAnswer
	case 3:
		return EndpointAMP
	case 4:
		return EndpointSQS
	case 5:
		return EndpointDebug
	case 6:
		return EndpointMetrics
	case 7:
		return EndpointPrometheus
	case 8:
		return EndpointStatus
	case 9:
		return EndpointRobots
	}
	return "other"
}

// Reasons a request is refused before it is understood.
const (
	ReasonMethod        = "method"         // wrong HTTP method (405)
	ReasonTooLarge      = "too_large"      // body over the limit (413)
	ReasonMalformed     = "malformed"      // undecodable or invalid message (400)
	ReasonUnknownBridge = "unknown_bridge" // client asked for a bridge not in the list
	ReasonDuplicateSid  = "duplicate_sid"  // proxy poll whose Sid is already waiting or matched (400)
	ReasonRateLimited   = "rate_limited"   // counted by the rate-limited metric instead
)

type reasonIdx uint8

const numReasons = 6

const reasonOther reasonIdx = numReasons - 1

func reasonIndex(s string) reasonIdx {
	switch s {
	case ReasonMethod:
		return 0
	case ReasonTooLarge:
		return 1
	case ReasonMalformed:
		return 2
	case ReasonUnknownBridge:
		return 3
	case ReasonDuplicateSid:
		return 4
	}
	return reasonOther
}

func (r reasonIdx) String() string {
	switch r {
	case 0:
		return ReasonMethod
	case 1:
		return ReasonTooLarge
	case 2:
		return ReasonMalformed
	case 3:
		return ReasonUnknownBridge
	case 4:
		return ReasonDuplicateSid
	}
	return "other"
}

// countryCode returns cc if it is a two-character code of [A-Z0-9] (what
// tor's geoip files contain) and "??" otherwise.
func countryCode(cc string) string {
	if len(cc) != 2 || !countryChar(cc[0]) || !countryChar(cc[1]) {
		return unknownCountry
	}
	return cc
}

func countryChar(c byte) bool {
	return 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// unknownCountry is the country of an address the geoip database does not
// know (or of every address when there is no database).
const unknownCountry = "??"
