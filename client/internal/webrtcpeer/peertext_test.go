package webrtcpeer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/messages"
)

// TestAnswerErrorHidesPeerText: pion refuses an answer with an error that
// quotes the offending SDP text; Connect's error matches ErrBadAnswer and
// does not repeat it.
func TestAnswerErrorHidesPeerText(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	d, err := NewDialer(Config{LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	sdp := "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN PEERTEXT 0.0.0.0\r\n"
	answer, err := messages.SessionDescription{Type: messages.SDPTypeAnswer, SDP: sdp}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, err = d.Connect(context.Background(), func(context.Context, string) (string, error) { return answer, nil }, nil)
	if !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("Connect = %v, want ErrBadAnswer", err)
	}
	if strings.Contains(err.Error(), "PEERTEXT") {
		t.Errorf("error repeats the proxy's text: %v", err)
	}
}

func TestChannelError(t *testing.T) {
	peer := errors.New("[0xc0001] abort chunk, with following errors: (User Initiated Abort: \x1b[31mPEERTEXT)")
	for _, err := range []error{io.EOF, io.ErrClosedPipe, net.ErrClosed, peer, fmt.Errorf("read: %w", peer)} {
		got := channelError(err)
		if !errors.Is(got, ErrClosed) || strings.Contains(got.Error(), "PEERTEXT") {
			t.Errorf("channelError(%q) = %q", err, got)
		}
	}
}
