package relay

import (
	"encoding/binary"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// KCP segment layout (kcp-go, little-endian): conv u32 | cmd u8 | frg u8 |
// wnd u16 | ts u32 | sn u32 | una u32 | len u32 | data[len].
const (
	kcpHeaderLen = 24
	kcpCmdPush   = 81
	kcpCmdWins   = 84 // highest command (81 push, 82 ack, 83 window ask, 84 window tell)
)

// opensSession reports whether p, a KCP packet for a ClientID that has no
// session yet, is what a Snowflake client sends first: one or more
// well-formed segments of one conversation, nothing after them, and among
// them the conversation's first data segment (push, sn 0) whose data begins
// a smux frame of Snowflake's version. kcp-go's listener would start a
// session for any 24 bytes; the relay lets only such a packet through.
func opensSession(p []byte) bool {
	if len(p) < kcpHeaderLen {
		return false
	}
	conv := binary.LittleEndian.Uint32(p)
	opens := false
	for len(p) > 0 {
		if len(p) < kcpHeaderLen || binary.LittleEndian.Uint32(p) != conv {
			return false
		}
		cmd := p[4]
		sn := binary.LittleEndian.Uint32(p[12:])
		n := binary.LittleEndian.Uint32(p[20:])
		if cmd < kcpCmdPush || cmd > kcpCmdWins || uint64(n) > uint64(len(p)-kcpHeaderLen) {
			return false
		}
		data := p[kcpHeaderLen : kcpHeaderLen+int(n)]
		if cmd == kcpCmdPush && sn == 0 && n > 0 && data[0] == turbotunnel.SmuxVersion {
			opens = true
		}
		p = p[kcpHeaderLen+int(n):]
	}
	return opens
}
