package turbotunnel

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
	KCPHeaderLen = 24
	KCPCmdPush   = 81 // data, which the peer acknowledges
	KCPCmdAck    = 82
	KCPCmdWask   = 83 // window probe: the peer answers with its window
	KCPCmdWins   = 84 // window announcement; the highest command
)

// KCPSegment is one whole segment of a KCP packet, header and data, as
// NextKCPSegment cuts it; its methods read the header in place.
type KCPSegment []byte

func (s KCPSegment) Conv() uint32 { return binary.LittleEndian.Uint32(s[0:4]) }
func (s KCPSegment) Cmd() byte    { return s[4] }
func (s KCPSegment) Wnd() uint16  { return binary.LittleEndian.Uint16(s[6:8]) }
func (s KCPSegment) TS() uint32   { return binary.LittleEndian.Uint32(s[8:12]) }
func (s KCPSegment) SN() uint32   { return binary.LittleEndian.Uint32(s[12:16]) }
func (s KCPSegment) Una() uint32  { return binary.LittleEndian.Uint32(s[16:20]) }
func (s KCPSegment) Data() []byte { return s[KCPHeaderLen:] }

// NextKCPSegment splits the KCP packet p into its first segment and the
// rest; false if p does not start with a whole segment (a header, and as
// many bytes of data as it announces).
func NextKCPSegment(p []byte) (seg KCPSegment, rest []byte, ok bool) {
	if len(p) < KCPHeaderLen {
		return nil, nil, false
	}
	n := binary.LittleEndian.Uint32(p[20:24])
	if uint64(n) > uint64(len(p)-KCPHeaderLen) {
		return nil, nil, false
	}
	end := KCPHeaderLen + int(n)
	return KCPSegment(p[:end]), p[end:], true
}
