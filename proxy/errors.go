package proxy

import "errors"

// Configuration errors, returned (wrapped) by New.
var (
	// ErrNoBroker: Config.BrokerURL is empty.
	ErrNoBroker = errors.New("no broker URL configured")
	// ErrInvalidConfig: a Config field has a value New cannot use.
	ErrInvalidConfig = errors.New("invalid proxy configuration")
	// ErrAlreadyRunning: Run was called twice.
	ErrAlreadyRunning = errors.New("proxy already running")
)

// Relay URL errors, from the checks applied to every relay URL.
var (
	// ErrRelayURL: the relay URL does not parse or has no host.
	ErrRelayURL = errors.New("invalid relay URL")
	// ErrRelayScheme: the scheme is not wss (or ws when non-TLS relays are
	// allowed).
	ErrRelayScheme = errors.New("relay URL scheme not allowed")
	// ErrRelayHostname: the hostname does not match the accepted relay
	// pattern.
	ErrRelayHostname = errors.New("relay hostname does not match the accepted pattern")
	// ErrRelayPort: the relay URL's port is not one the pattern allows
	// (443 unless the pattern lists ports).
	ErrRelayPort = errors.New("relay port not allowed by the pattern")
	// ErrRelayPrivate: the relay's address, literal or resolved, is not a
	// public address (see addrpolicy.go).
	ErrRelayPrivate = errors.New("relay address is not public")
	// ErrRelayResolve: the relay's hostname did not resolve.
	ErrRelayResolve = errors.New("cannot resolve relay hostname")
)

// Errors of the broker exchange and of sessions.
var (
	// ErrBrokerStatus: the broker answered with an HTTP status other than 200.
	ErrBrokerStatus = errors.New("broker returned an unexpected HTTP status")
	// ErrBrokerTooLarge: the broker's reply exceeds messages.MaxBodySize.
	ErrBrokerTooLarge = errors.New("broker reply too large")
	// ErrClientGone: the broker no longer waits for our answer.
	ErrClientGone = errors.New("broker returned client gone")
	// ErrBadOffer: the client's offer is not a usable SDP offer.
	ErrBadOffer = errors.New("bad offer from broker")
	// ErrDataChannelTimeout: the client did not open a DataChannel in time.
	ErrDataChannelTimeout = errors.New("timed out waiting for the client's data channel")
	// ErrPeerConnectionFailed: ICE or DTLS failed or the peer connection closed.
	ErrPeerConnectionFailed = errors.New("peer connection failed")
	// ErrMessageTooLarge: the client sent a DataChannel message larger than
	// the proxy accepts (MaxMessageSize).
	ErrMessageTooLarge = errors.New("data channel message too large")
	// ErrInactive: no byte moved in either direction for InactivityTimeout.
	ErrInactive = errors.New("session inactive")
	// ErrNoCandidates: ICE gathering found no candidate (every port of
	// the ephemeral range taken, or no usable interface), so no answer is
	// sent: the client's rendezvous times out and it tries another proxy.
	ErrNoCandidates = errors.New("no ICE candidate gathered")
	// ErrNoPublicCandidate: every candidate gathered had a local address
	// (no STUN server and no public interface, or -outbound-address
	// missing behind a 1:1 NAT), so no answer is sent: brokers refuse an
	// answer without a candidate. Set -stun, or -outbound-address.
	ErrNoPublicCandidate = errors.New("no public ICE candidate (behind a NAT, set -stun or -outbound-address)")
	// ErrNATProbe: the NAT probe server could not be used.
	ErrNATProbe = errors.New("nat probe failed")
)
