package client

import (
	"github.com/flurrypt/flurry/client/internal/multipath"
	"github.com/flurrypt/flurry/common/encapsulation"
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

// StandBy lifts the Peer's idle timeout while the carrier stands by:
// nothing comes through a standby proxy until it takes over.
func (c *carrier) StandBy(standing bool) { c.peer.StandBy(standing) }

// KeepAlive sends a padding chunk: traffic for the proxy's and the relay's
// idle timeouts, which the relay's KCP never sees.
func (c *carrier) KeepAlive() error {
	c.wbuf.Reset()
	if _, err := encapsulation.WritePadding(&c.wbuf, 1); err != nil {
		return err
	}
	_, err := c.peer.Write(c.wbuf.Bytes())
	return err
}

var _ multipath.StandbyCarrier = (*carrier)(nil)
