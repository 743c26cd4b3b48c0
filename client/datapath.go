package client

import (
	"github.com/flurrypt/flurry/client/internal/multipath"
)

// WritePacket sends p as one encapsulated packet in one DataChannel
// message.
func (c *carrier) WritePacket(p []byte) error {
	c.wbuf.Reset()
	if err := c.appendPacket(p); err != nil {
		return err
	}
	_, err := c.peer.Write(c.wbuf.Bytes())
	return err
}

// WritePackets sends ps encapsulated one after the other in one
// DataChannel message. Relays read the encapsulation as a byte stream
// whatever the message boundaries (Snowflake's server copies WebSocket
// messages into a pipe and reads chunks from it; Flurry's relay reads the
// WebSocket as a stream too), so this is what Snowflake's client would send
// in several messages, for one message's cost in SCTP and DTLS.
func (c *carrier) WritePackets(ps [][]byte) error {
	c.wbuf.Reset()
	for _, p := range ps {
		if err := c.appendPacket(p); err != nil {
			return err
		}
	}
	_, err := c.peer.Write(c.wbuf.Bytes())
	return err
}

var _ multipath.BatchCarrier = (*carrier)(nil)
