package client

import (
	"encoding/binary"
	"sync/atomic"
)

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

// kcpProber makes window probes for the reply watch: it remembers the
// header fields of the session's latest outgoing packet, so that a probe
// tells the relay nothing new. The relay's KCP answers a probe (WASK)
// with its window (WINS) at its next flush.
type kcpProber struct {
	convUna atomic.Uint64 // conv<<32 | una of the latest outgoing packet; 0: none yet
	wnd     atomic.Uint32 // its window
}

// expectsReply is kcpExpectsReply, recording p's header for probes.
func (k *kcpProber) expectsReply(p []byte) bool {
	if len(p) >= kcpHeaderLen {
		conv := binary.LittleEndian.Uint32(p[0:4])
		una := binary.LittleEndian.Uint32(p[16:20])
		k.convUna.Store(uint64(conv)<<32 | uint64(una))
		k.wnd.Store(uint32(binary.LittleEndian.Uint16(p[6:8])))
	}
	return kcpExpectsReply(p)
}

// probe returns a window probe for the session, or nil before its first
// packet. The una and window are those the session last sent, so the relay
// learns nothing from the probe but that it must answer.
func (k *kcpProber) probe() []byte {
	cu := k.convUna.Load()
	if cu == 0 {
		return nil
	}
	p := make([]byte, kcpHeaderLen)
	binary.LittleEndian.PutUint32(p[0:4], uint32(cu>>32))
	p[4] = kcpCmdWask
	binary.LittleEndian.PutUint16(p[6:8], uint16(k.wnd.Load()))
	binary.LittleEndian.PutUint32(p[16:20], uint32(cu))
	return p
}
