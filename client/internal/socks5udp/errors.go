package socks5udp

import "errors"

// Errors of Associate and of PacketConn. They are wrapped with details; match
// them with errors.Is.
var (
	// ErrInvalidConfig: an invalid Config (address, username or password).
	ErrInvalidConfig = errors.New("invalid SOCKS5 configuration")
	// ErrProtocol: the proxy answered something that is not SOCKS5.
	ErrProtocol = errors.New("SOCKS5 protocol error")
	// ErrNoAcceptableAuth: the proxy accepts none of the offered
	// authentication methods.
	ErrNoAcceptableAuth = errors.New("SOCKS5 proxy accepts no offered authentication method")
	// ErrAuthFailed: the proxy refused the username and password.
	ErrAuthFailed = errors.New("SOCKS5 authentication failed")
	// ErrRequestFailed: the proxy refused UDP ASSOCIATE; the error text
	// names the reply code.
	ErrRequestFailed = errors.New("SOCKS5 UDP ASSOCIATE refused")
	// ErrAssociationEnded: the proxy closed the control connection, which
	// ends the association.
	ErrAssociationEnded = errors.New("SOCKS5 UDP association ended by the proxy")
	// ErrAddress: a destination WriteTo cannot send to (not a
	// *net.UDPAddr or DomainAddr, or an invalid one).
	ErrAddress = errors.New("unsupported destination address")
	// ErrTooLarge: the datagram with its header would exceed
	// MaxDatagramSize.
	ErrTooLarge = errors.New("datagram too large")
	// ErrNotConnected: Write on a PacketConn, which has no default
	// destination (use WriteTo).
	ErrNotConnected = errors.New("packet conn has no default destination")

	// errMalformed: a received datagram whose header cannot be used.
	errMalformed = errors.New("malformed SOCKS5 UDP header")
)
