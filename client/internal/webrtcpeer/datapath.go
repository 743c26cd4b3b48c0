package webrtcpeer

import (
	"fmt"

	"github.com/pion/transport/v5"

	"github.com/flurrypt/flurry/common/sockbuf"
)

// dataPathNet returns the network pion's sockets are made on: n (the
// host's network if nil) with large kernel buffers on every UDP socket, so
// that a burst of a download is not dropped while the reader is late (each
// drop costs SCTP a retransmission timeout of at least one second). It
// changes how fast bytes move, none of what goes on the wire.
func dataPathNet(n transport.Net) (transport.Net, error) {
	bn, err := sockbuf.Net(n)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return bn, nil
}
