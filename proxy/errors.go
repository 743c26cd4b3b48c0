package proxy

import "errors"

// Configuration errors, returned (wrapped) by New.
var (
	// ErrInvalidConfig: a Config field has a value New cannot use.
	ErrInvalidConfig = errors.New("invalid proxy configuration")
	// errAlreadyRunning: Run was called twice.
	errAlreadyRunning = errors.New("proxy already running")
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
	// errBrokerStatus: the broker answered with an HTTP status other than 200.
	errBrokerStatus = errors.New("broker returned an unexpected HTTP status")
	// errBrokerTooLarge: the broker's reply exceeds messages.MaxBodySize.
	errBrokerTooLarge = errors.New("broker reply too large")
	// errClientGone: the broker no longer waits for our answer.
	errClientGone = errors.New("broker returned client gone")
	// ErrBadOffer: the client's offer is not a usable SDP offer.
	ErrBadOffer = errors.New("bad offer from broker")
	// errDataChannelTimeout: the client did not open a DataChannel in time.
	errDataChannelTimeout = errors.New("timed out waiting for the client's data channel")
	// errPeerConnectionFailed: ICE or DTLS failed or the peer connection closed.
	errPeerConnectionFailed = errors.New("peer connection failed")
	// errMessageTooLarge: the client sent a DataChannel message larger than
	// the proxy accepts (MaxMessageSize).
	errMessageTooLarge = errors.New("data channel message too large")
	// ErrInactive: no byte moved in either direction for InactivityTimeout.
	ErrInactive = errors.New("session inactive")
	// errNoCandidates: ICE gathering found no candidate (every port of
	// the ephemeral range taken, or no usable interface), so no answer is
	// sent: the client's rendezvous times out and it tries another proxy.
	errNoCandidates = errors.New("no ICE candidate gathered")
	// ErrNoPublicCandidate: every candidate gathered had a local address
	// (no STUN server and no public interface, or -outbound-address
	// missing behind a 1:1 NAT), so no answer is sent: brokers refuse an
	// answer without a candidate. Set -stun, or -outbound-address.
	ErrNoPublicCandidate = errors.New("no public ICE candidate (behind a NAT, set -stun or -outbound-address)")
	// ErrNATProbe: the NAT probe server could not be used.
	ErrNATProbe = errors.New("nat probe failed")
)
