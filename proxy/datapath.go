package proxy

import (
	"fmt"
	"io"

	"github.com/gorilla/websocket"
	"github.com/pion/transport/v5"

	"github.com/flurrypt/flurry/common/sockbuf"
)

// dataPathNet returns the network pion's sockets are made on: the host's,
// with large kernel buffers on every UDP socket, so that a burst from the
// client is not dropped while the reader is late (each drop costs SCTP a
// retransmission timeout of at least one second). It changes how fast bytes
// move, none of what goes on the wire.
func dataPathNet() (transport.Net, error) {
	n, err := sockbuf.Net(nil)
	if err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	return n, nil
}

// downstreamMessageSize bounds the DataChannel messages the proxy sends:
// a relay's WebSocket message (at most about 4 KiB from Flurry's and
// Snowflake's relays) goes out as one message, not as pieces of
// copyBufferSize, which halves pion's per-message work; 16 KiB stays far
// below any client's announced maximum (Snowflake's and browsers' 64 KiB
// and more).
const downstreamMessageSize = 16 << 10

// relayToClient copies WebSocket messages from the relay to the
// DataChannel, each as one message (larger ones in pieces of
// downstreamMessageSize), waiting whenever more than bufferedHigh bytes are
// queued for the client.
func (p *Proxy) relayToClient(ws *websocket.Conn, ch openedChannel, s *session) error {
	bp := p.largeBufs.Get().(*[]byte)
	defer p.largeBufs.Put(bp)
	buf := (*bp)[:min(len(*bp), downstreamMessageSize)]
	for {
		_, r, err := ws.NextReader() // only text and binary messages
		if err != nil {
			return err
		}
		for end := false; !end; {
			n, err := io.ReadFull(r, buf)
			switch {
			case err == io.EOF || err == io.ErrUnexpectedEOF:
				end = true
			case err != nil:
				return err
			}
			if n == 0 {
				continue
			}
			if _, werr := ch.rwc.Write(buf[:n]); werr != nil {
				return werr
			}
			p.m.addToClient(n)
			s.moved.Add(1)
			for ch.dc.BufferedAmount() > bufferedHigh {
				select {
				case <-s.lowWater:
				case <-s.done:
					return s.err
				}
			}
		}
	}
}
