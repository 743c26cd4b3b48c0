package webrtcpeer

import "errors"

// Reasons a connection attempt fails or a Peer dies; Peer.Err and the errors
// of Dialer.Connect match them with errors.Is.
var (
	// errOpenTimeout: the DataChannel did not open in time after the answer.
	errOpenTimeout = errors.New("data channel did not open in time")
	// errConnectionFailed: ICE or DTLS failed before the DataChannel opened.
	errConnectionFailed = errors.New("peer connection failed")
	// ErrClosed: the DataChannel or PeerConnection was closed.
	ErrClosed = errors.New("data channel closed")
	// errDisconnected: ICE heard nothing from the proxy for the dead-peer
	// timeout.
	errDisconnected = errors.New("proxy unreachable")
	// ErrIdle: no data arrived for the idle timeout.
	ErrIdle = errors.New("no data from proxy")
	// errMessageTooLarge: the proxy sent a message larger than a Peer reads.
	errMessageTooLarge = errors.New("data channel message too large")
	// ErrBadAnswer: the negotiation returned an unusable answer.
	ErrBadAnswer = errors.New("invalid answer")
	// ErrICEServer: an ICE server URL that is not stun:host[:port].
	ErrICEServer = errors.New("invalid ICE server")
	// errLoopbackWithICE: LoopbackOnly and ICE servers both set.
	errLoopbackWithICE = errors.New("loopback-only peers take no ICE servers")
)
