package webrtcnet

import (
	"time"

	"github.com/pion/webrtc/v5"
)

// The SCTP sender's congestion control settings (see DataPath). pion/sctp
// cuts DATA into packets of at most sctpMTU bytes (webrtc's fixed
// outbound MTU); the windows below are whole packets of it.
const (
	sctpMTU = 1191

	// SCTPCwndCAStep is how much the congestion window grows per round
	// trip in congestion avoidance: 4 packets where RFC 9260 (and pion's
	// default) grows by one. pion halves the window on every loss event,
	// so on a path with random loss its rate follows the Reno formula,
	// MTU/RTT × 1.22/√p (about 1 MB/s at 20 ms and 0.5 % loss); a step of
	// k packets multiplies that by about √k. Larger steps carried more in
	// the lossy-path benchmark but overflowed a 5 Mbit/s bottleneck's
	// queue three to five times as often (docs/performance-log.md).
	SCTPCwndCAStep = 4 * sctpMTU

	// SCTPMinCwnd is the floor of the congestion window: the initial
	// window (4 packets) rather than the single packet pion falls back to
	// after a retransmission timeout.
	SCTPMinCwnd = 4 * sctpMTU

	// SCTPFastRtxWnd bounds what one fast retransmission resends: up to 32
	// packets' worth of chunks reported missing, where pion's default
	// resends one packet and leaves the other losses of a window to the
	// retransmission timer (one second at least).
	SCTPFastRtxWnd = 32 * sctpMTU

	// SCTPRTOMax caps the retransmission timeout's exponential backoff:
	// pion's default of 60 s turns a few consecutive losses of one chunk
	// on a bad path into a stall of minutes.
	SCTPRTOMax = 5 * time.Second
)

// DataPath applies the pion settings of the client's and the proxy's data
// path that a peer without them ignores or never sees.
//
// SCTP SNAP (an IETF draft): each end puts its SCTP INIT in
// its session description (a=sctp-init), and when both did, the
// association starts as soon as DTLS is up, without SCTP's own handshake
// of four packets: a round trip less before the first byte. A peer that
// does not know the attribute ignores it, and the handshake runs as
// before (Snowflake's peers, browsers without SNAP).
//
// SCTP zero checksum (RFC 9653): each end announces in its INIT that it
// accepts packets without a CRC32c, as DTLS already authenticates every
// record; an end leaves the checksum out only when its peer announced the
// same. Peers that do not know the parameter skip it (its type says so) and
// keep checksumming both ways, Snowflake's pion peers of every version
// included.
//
// The SCTP sender's congestion control (the constants above) is local to
// the sender: nothing on the wire says how a sender grows its window or
// when it retransmits, so a Snowflake peer sees the same protocol. The
// proxy's sender paces downloads, the client's uploads.
func DataPath(se *webrtc.SettingEngine) {
	se.EnableSCTPZeroChecksum(true)
	se.EnableSctpSnap(true)
	se.SetSCTPCwndCAStep(SCTPCwndCAStep)
	se.SetSCTPMinCwnd(SCTPMinCwnd)
	se.SetSCTPFastRtxWnd(SCTPFastRtxWnd)
	se.SetSCTPRTOMax(SCTPRTOMax)
}
