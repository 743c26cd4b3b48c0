package webrtcpeer

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
)

// pion's error texts may repeat what the proxy sent: SDP parse errors quote
// the offending line (control characters included), an SCTP ABORT carries
// a free-text reason. They reach events, and through them tor's log, so the
// errors of this package never include them: answerError and channelError
// map them to fixed texts.

// Fixed reasons for a failed DataChannel read or write.
var (
	errChannelEOF    = fmt.Errorf("%w: closed by the proxy", ErrClosed)
	errChannelClosed = fmt.Errorf("%w: closed locally", ErrClosed)
	errChannelFailed = fmt.Errorf("%w: transport error", ErrClosed)
	// errAnswerRefused: pion refused the answer (SetRemoteDescription).
	errAnswerRefused = fmt.Errorf("%w: refused by WebRTC", ErrBadAnswer)
)

// channelError maps a DataChannel (SCTP, DTLS) error to a fixed reason
// matching ErrClosed.
func channelError(err error) error {
	switch {
	case errors.Is(err, io.EOF):
		return errChannelEOF
	case errors.Is(err, io.ErrClosedPipe), errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrClosed):
		return errChannelClosed
	default:
		return errChannelFailed
	}
}
