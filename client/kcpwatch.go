package client

import "encoding/binary"

// KCP segment layout, as kcp-go writes it with no FEC and no encryption
// (Snowflake's parameters): a packet is one or more segments, each a
// 24-byte little-endian header followed by len bytes of data.
//
//	0       4     5     6       8       12      16      20      24
//	+-------+-----+-----+-------+-------+-------+-------+-------+------
//	| conv  | cmd | frg |  wnd  |  ts   |  sn   |  una  |  len  | data
//	+-------+-----+-----+-------+-------+-------+-------+-------+------
const (
	kcpHeaderLen = 24
	kcpCmdPush   = 81 // data: the relay acknowledges it
	kcpCmdAck    = 82
	kcpCmdWask   = 83 // window probe: the relay answers with its window
	kcpCmdWins   = 84
)

// kcpExpectsReply reports whether the relay answers the KCP packet p: it
// carries data or a window probe, not only acknowledgements and window
// announcements. A malformed packet expects nothing.
func kcpExpectsReply(p []byte) bool {
	for len(p) >= kcpHeaderLen {
		switch p[4] {
		case kcpCmdPush, kcpCmdWask:
			return true
		case kcpCmdAck, kcpCmdWins:
		default:
			return false
		}
		n := binary.LittleEndian.Uint32(p[20:24])
		if uint64(n) > uint64(len(p)-kcpHeaderLen) {
			return false
		}
		p = p[kcpHeaderLen+int(n):]
	}
	return false
}
