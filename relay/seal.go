package relay

import (
	"io"

	"github.com/flurrypt/flurry/common/tunnelseal"
)

// Sealed carriers (package common/tunnelseal) and who may join a session.
//
// With Config.RelayKey, a carrier that starts with tunnelseal.SealedToken
// instead of Snowflake's token is sealed: its join header proves the
// session key (derived from the client's ephemeral key and the relay key),
// and every packet it carries, both ways, is sealed under keys of its own.
// The first carrier of a ClientID decides whether the ClientID's session is
// sealed; a carrier of the other kind is refused for as long as the
// ClientID has a session or carriers, so that a proxy that learnt a sealed
// session's ClientID cannot open a Snowflake carrier for it. A sealed join
// whose number the session has seen is refused (a replayed header), and a
// packet that does not open ends its carrier before KCP sees it.
//
// Snowflake's clients cannot prove anything: for them the relay caps the
// carriers one ClientID may hold at once (Config.MaxCarriersPerClient),
// which bounds how many carriers a proxy that learnt the ClientID can add.

// carrierSeal is a sealed carrier's two directions: recv is the reader's,
// send the writer's.
type carrierSeal struct {
	recv, send *tunnelseal.Stream
}

// joinState is what a ClientID's carriers have to match.
type joinState struct {
	sealed bool                  // fixed by the ClientID's first carrier
	seen   tunnelseal.JoinWindow // sealed: join numbers accepted
}

// handshakeSealed reads the rest of a sealed join header (the token is in
// c.hdr) and checks it.
func (c *carrier) handshakeSealed() bool {
	var hdr [tunnelseal.HeaderLen]byte
	copy(hdr[:], c.hdr[:len(tunnelseal.SealedToken)])
	if _, err := io.ReadFull(c.conn, hdr[len(tunnelseal.SealedToken):]); err != nil {
		if isTimeout(err) {
			c.r.stats.fail(failTimeout)
		} else {
			c.r.stats.fail(failError)
		}
		return false
	}
	j, err := c.r.seal.Accept(&hdr)
	if err != nil {
		c.r.stats.fail(failBadSeal)
		c.r.log.Debug("sealed carrier refused", "err", err)
		return false
	}
	c.id = j.ID
	c.idAddr = c.id.Addr()
	c.seal = &carrierSeal{recv: j.Recv, send: j.Send}
	c.sealJoin = j.Join
	return true
}

// mayJoin reports whether c may become a carrier of st's ClientID, and
// records its join. r.mu must be held.
func (r *Relay) mayJoin(st *clientState, c *carrier) bool {
	sealed := c.seal != nil
	if st.carriers <= 0 && st.session == nil {
		// The ClientID's first carrier (or the first since its session
		// ended): it decides.
		st.join = joinState{sealed: sealed}
	}
	switch {
	case st.join.sealed != sealed:
		r.stats.fail(failJoin)
		return false
	case sealed && !st.join.seen.Accept(c.sealJoin):
		r.stats.fail(failBadSeal)
		return false
	case !sealed && r.cfg.MaxCarriersPerClient > 0 && st.carriers >= r.cfg.MaxCarriersPerClient:
		r.stats.fail(failJoin)
		return false
	}
	return true
}

// open opens a sealed packet in place and returns its length. A packet
// that does not open ends the carrier.
func (c *carrier) open(b []byte) (int, error) {
	p, err := c.seal.recv.Open(b)
	if err != nil {
		c.r.stats.sealFailures.Add(1)
		return 0, err
	}
	return len(p), nil
}

// appendSealed appends p to msg as a sealed chunk, and returns msg.
func (c *carrier) appendSealed(msg, p []byte) []byte {
	out, err := c.seal.send.AppendChunk(msg, p)
	if err != nil {
		return msg // the counter is exhausted: the client cannot open it anyway
	}
	c.r.stats.carrierOut.Add(uint64(len(p)))
	return out
}
