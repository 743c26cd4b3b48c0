package matcher

import "errors"

var (
	// ErrDuplicateSid means a poll used a session id that is already
	// waiting or matched.
	ErrDuplicateSid = errors.New("session id already in use")
	// ErrClosed means the matcher has been closed; no new poll is accepted.
	ErrClosed = errors.New("matcher closed")
	// ErrNoMatch means a poll ended (hold time passed or the matcher closed)
	// without a client.
	ErrNoMatch = errors.New("no client matched")
	// ErrStillWaiting means Await's time passed with the proxy still
	// waiting in its pool.
	ErrStillWaiting = errors.New("proxy still waiting")
	// ErrNoProxies means no waiting proxy could serve a client.
	ErrNoProxies = errors.New("no proxies available")
	// ErrTimedOut means a client's context ended before an answer arrived.
	ErrTimedOut = errors.New("timed out waiting for answer")
	// ErrBadBridge means a client named a bridge index outside 0..MaxBridges-1.
	ErrBadBridge = errors.New("bridge index out of range")
)
