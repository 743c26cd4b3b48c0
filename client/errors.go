package client

import (
	"errors"

	"github.com/flurrypt/flurry/client/internal/multipath"
	"github.com/flurrypt/flurry/client/internal/webrtcpeer"
)

// Configuration errors, returned by New (wrapped with details); each also
// matches ErrInvalidConfig.
var (
	// ErrNoRendezvous: no broker URL (url), AMP cache or SQS queue.
	ErrNoRendezvous = errors.New("no rendezvous method specified: set the broker URL (url=)")
	// ErrMultipleRendezvous: sqsqueue together with url or ampcache.
	ErrMultipleRendezvous = errors.New("multiple rendezvous methods specified")
	// ErrInvalidConfig: an option with an invalid value.
	ErrInvalidConfig = errors.New("invalid configuration")
)

// Runtime errors.
var (
	// ErrProxy: the SOCKS5 proxy (Config.SOCKS5Proxy) failed, for
	// example it refused UDP ASSOCIATE (CheckSOCKS5Proxy).
	ErrProxy = errors.New("SOCKS5 proxy failed")
	// ErrClosed is returned by Dial after Close.
	ErrClosed = errors.New("client closed")
	// ErrBroker: the broker answered with an error instead of a proxy.
	// The error text is one of the Broker* constants.
	ErrBroker = errors.New("broker error")
	// ErrNoProxy: Dial's context ended before any proxy connected; the
	// error also wraps the last failure, if any.
	ErrNoProxy = errors.New("no proxy connected")
	// ErrNoReply is the reason of an EventProxyLost for a proxy that was
	// dropped because data went out through it and nothing came back
	// for Config.ReplyTimeout (a proxy alive to WebRTC that forwards
	// nothing).
	ErrNoReply = multipath.ErrNoReply
	// ErrIdle is the reason of an EventProxyLost for a proxy from which
	// nothing arrived for Config.IdleTimeout (Snowflake's 20 s).
	ErrIdle = webrtcpeer.ErrIdle
	// ErrReplaced is the reason of an EventProxyLost for a proxy that
	// fell quiet (ICE heard nothing from it for longer than a live proxy
	// stays silent, see Config.DeadPeerTimeout) and was heard again after
	// its replacement had connected.
	ErrReplaced = errors.New("proxy replaced after falling quiet")
)

// errNotNeeded ends an attempt that a silent proxy started, before its
// offer went to the broker, when that proxy is heard again.
var errNotNeeded = errors.New("replacement not needed")
