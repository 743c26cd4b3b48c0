package wsserver

import (
	"errors"
	"fmt"
	"io"
	"net"
)

var (
	// errProtocol wraps how a peer broke RFC 6455.
	errProtocol = errors.New("websocket: protocol error")
	// errShortClose is why a close frame of one byte is a protocol error
	// (RFC 6455, section 5.5.1: none, or a two-byte code).
	errShortClose = errors.New("close frame of one byte")
	// errMessageSize is returned by WriteWithHeadRoom for a buffer without
	// the head room or with more than one write's payload.
	errMessageSize = errors.New("websocket: message does not fit one write")
	// errWriteFailed is returned by writes after one failed.
	errWriteFailed = errors.New("websocket: an earlier write failed")
	// errClosed is returned by Read and Write after Close; it matches both
	// net.ErrClosed and io.ErrClosedPipe.
	errClosed = fmt.Errorf("websocket: %w (%w)", net.ErrClosed, io.ErrClosedPipe)
)

// closeError is a close frame from the peer with a code other than 1000
// (normal closure) or 1005 (no status). Its reason text is not kept: it
// comes from the network and nothing here needs it.
type closeError struct {
	Code int
}

func (e *closeError) Error() string {
	return fmt.Sprintf("websocket: closed by peer with code %d", e.Code)
}
