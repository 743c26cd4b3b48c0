package client

import (
	"encoding/binary"
	"sync/atomic"

	"github.com/xtaci/kcp-go/v5"
)

// smux frame header, as smux writes it: version (1 byte), command (1),
// payload length (2, little-endian), stream id (4, little-endian); every
// command's payload follows its header.
const (
	smuxHeaderLen = 8
	smuxCmdFIN    = 1
)

// finWatchConn is a session's KCP conn as its smux sees it: it follows the
// frames the relay sends (smux's receive loop is its only reader) and
// notes the relay's FIN for the session's stream, which a closing session
// waits for (see closeLinger).
type finWatchConn struct {
	*kcp.UDPSession
	hdr  [smuxHeaderLen]byte // the header being read; owned by the reader
	have int                 // header bytes read; owned by the reader
	skip int                 // payload bytes of the current frame still to pass; owned by the reader
	sid  atomic.Uint32       // the stream's id, once opened (smux's ids start at 1)
	fin  atomic.Bool         // the relay closed the stream
}

func (c *finWatchConn) Read(p []byte) (int, error) {
	n, err := c.UDPSession.Read(p)
	c.scan(p[:n])
	return n, err
}

// scan follows the frame boundaries through p, the next bytes of the
// stream of frames, however they are cut.
func (c *finWatchConn) scan(p []byte) {
	for len(p) > 0 {
		if c.skip > 0 {
			k := min(c.skip, len(p))
			c.skip -= k
			p = p[k:]
			continue
		}
		k := copy(c.hdr[c.have:], p)
		c.have += k
		p = p[k:]
		if c.have < smuxHeaderLen {
			return
		}
		c.have = 0
		c.skip = int(binary.LittleEndian.Uint16(c.hdr[2:4]))
		sid := binary.LittleEndian.Uint32(c.hdr[4:8])
		if c.hdr[1] == smuxCmdFIN && sid != 0 && sid == c.sid.Load() {
			c.fin.Store(true)
		}
	}
}
