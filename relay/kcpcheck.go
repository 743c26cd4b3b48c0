package relay

import "github.com/flurrypt/flurry/common/turbotunnel"

// opensSession reports whether p, a KCP packet for a ClientID that has no
// session yet, is what a Snowflake client sends first: one or more
// well-formed segments of one conversation, nothing after them, and among
// them the conversation's first data segment (push, sn 0) whose data begins
// a smux frame of Snowflake's version. kcp-go's listener would start a
// session for any 24 bytes; the relay lets only such a packet through.
func opensSession(p []byte) bool {
	first, _, ok := turbotunnel.NextKCPSegment(p)
	if !ok {
		return false
	}
	opens := false
	for len(p) > 0 {
		seg, rest, ok := turbotunnel.NextKCPSegment(p)
		if !ok || seg.Conv() != first.Conv() || seg.Cmd() < turbotunnel.KCPCmdPush || seg.Cmd() > turbotunnel.KCPCmdWins {
			return false
		}
		if data := seg.Data(); seg.Cmd() == turbotunnel.KCPCmdPush && seg.SN() == 0 && len(data) > 0 && data[0] == turbotunnel.SmuxVersion {
			opens = true
		}
		p = rest
	}
	return opens
}
