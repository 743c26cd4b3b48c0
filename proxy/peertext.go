package proxy

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/gorilla/websocket"
)

// Errors of a client session can carry what the client or the relay sent:
// pion's SDP errors quote the offer's lines (control characters included),
// an SCTP abort carries the client's free-text reason, a WebSocket close
// frame the relay's. logReason maps every error to a text from a fixed
// set before it is logged.

// loggedErrors are the errors whose own texts are logged; the first one an
// error matches wins, so specific ones come first.
var loggedErrors = []error{
	ErrRelayPort, ErrRelayHostname, ErrRelayPrivate, ErrRelayScheme, ErrRelayResolve, ErrRelayURL,
	ErrBadOffer, errDataChannelTimeout, errPeerConnectionFailed, errMessageTooLarge, ErrInactive,
	errNoCandidates, ErrNoPublicCandidate, errClientGone, errBrokerStatus, errBrokerTooLarge,
	errRelayDown, websocket.ErrBadHandshake,
	context.Canceled, context.DeadlineExceeded, io.ErrUnexpectedEOF, io.EOF, net.ErrClosed,
}

// errRelayDown: the default relay failed its last reachability check.
var errRelayDown = errors.New("default relay unreachable")

// logReason returns a fixed text for err: the text of a known error, the
// system's text for an errno, or a category.
func logReason(err error) string {
	for _, known := range loggedErrors {
		if errors.Is(err, known) {
			return known.Error()
		}
	}
	var errno syscall.Errno
	var closeErr *websocket.CloseError
	var netErr net.Error
	switch {
	case errors.As(err, &errno):
		return errno.Error()
	case errors.As(err, &closeErr):
		return "relay closed the WebSocket"
	case errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	}
	return "connection error (text withheld: it may repeat peer data)"
}
