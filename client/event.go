package client

import (
	"fmt"
	"time"
)

// EventKind says what happened.
type EventKind uint8

// Event kinds, in the order a connection attempt produces them.
const (
	// EventOfferCreated: a WebRTC offer is ready and goes to the broker.
	EventOfferCreated EventKind = iota + 1
	// EventBrokerAnswered: the broker matched us with a proxy and returned
	// its answer.
	EventBrokerAnswered
	// EventProxyConnected: the DataChannel to a proxy is open and carries
	// the session.
	EventProxyConnected
	// EventProxyFailed: an attempt failed before a proxy connected
	// (rendezvous error, broker error, ICE or DataChannel timeout); Err
	// says why.
	EventProxyFailed
	// EventProxyLost: a connected proxy went away; Err says why. The
	// session continues over the other proxies, or the next one.
	EventProxyLost
)

func (k EventKind) String() string {
	switch k {
	case EventOfferCreated:
		return "offer created"
	case EventBrokerAnswered:
		return "broker answered"
	case EventProxyConnected:
		return "proxy connected"
	case EventProxyFailed:
		return "proxy failed"
	case EventProxyLost:
		return "proxy lost"
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event reports a step of a session's life to an embedding application
// (Config.Events). No field holds an IP address or other data from the
// network beyond the fixed broker error texts.
type Event struct {
	Kind EventKind
	Time time.Time
	// Peer is the id of the proxy connection ("snowflake-" and 16 hex
	// digits), empty for events before an offer exists.
	Peer string
	// NAT is the NAT type sent to the broker (EventOfferCreated).
	NAT string
	// Err is the reason of EventProxyFailed and EventProxyLost.
	Err error
}

func (e Event) String() string {
	s := e.Kind.String()
	if e.Peer != "" {
		s += " " + e.Peer
	}
	if e.NAT != "" {
		s += " nat=" + e.NAT
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}
