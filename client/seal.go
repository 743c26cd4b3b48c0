package client

import (
	"fmt"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/tunnelseal"
)

// Sealed carriers (Config.RelayKey, package common/tunnelseal): each
// session makes an ephemeral key and the ClientID bound to it; each carrier
// opens with a join header that proves the session key to the relay, and
// every packet on it is sealed under keys of its own. A packet that does
// not open ends the carrier (a proxy that alters the stream loses it),
// never the session.

// newSeal starts a session's sealing, or returns nil without a relay key.
func newSeal(cfg *settings) (*tunnelseal.Client, error) {
	if cfg.relayKey == nil {
		return nil, nil
	}
	s, err := tunnelseal.NewClient(*cfg.relayKey)
	if err != nil {
		return nil, fmt.Errorf("start sealed session: %w", err)
	}
	return s, nil
}

// joinSealed sends the carrier's join header, in one message.
func (c *carrier) joinSealed(s *tunnelseal.Client) error {
	hdr, send, recv, err := s.Join()
	if err != nil {
		return fmt.Errorf("sealed join: %w", err)
	}
	c.send, c.recv = send, recv
	if _, err := c.peer.Write(hdr[:]); err != nil {
		return fmt.Errorf("send join header: %w", err)
	}
	return nil
}

// open opens the sealed packet p read with error rerr (a truncated packet
// cannot open).
func (c *carrier) open(p []byte, rerr error) (int, error) {
	if rerr != nil {
		return 0, rerr
	}
	out, err := c.recv.Open(p)
	if err != nil {
		return 0, err
	}
	return len(out), nil
}

// appendPacket appends p to the write buffer as one chunk, sealed if the
// carrier is.
func (c *carrier) appendPacket(p []byte) error {
	if c.send == nil {
		_, err := encapsulation.WriteData(&c.wbuf, p)
		return err
	}
	out, err := c.send.AppendChunk(c.wbuf.AvailableBuffer(), p)
	if err != nil {
		return err
	}
	c.wbuf.Write(out)
	return nil
}
