package webrtcpeer

import (
	"fmt"

	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v4"

	"github.com/flurrypt/flurry/common/sockbuf"
)

// tuneDataPath sets the SettingEngine options that only change how fast
// bytes move, none of what goes on the wire: pion's UDP sockets (on n, the
// host's network if nil) get large kernel buffers, so that a burst of a
// download is not dropped while the reader is late (each drop costs SCTP a
// retransmission timeout of at least one second).
func tuneDataPath(se *webrtc.SettingEngine, n transport.Net) error {
	bn, err := sockbuf.Net(n)
	if err != nil {
		return fmt.Errorf("network: %w", err)
	}
	se.SetNet(bn)
	return nil
}
