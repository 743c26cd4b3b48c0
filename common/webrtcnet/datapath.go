package webrtcnet

import "github.com/pion/webrtc/v4"

// DataPath applies the pion settings of the client's and the proxy's data
// path that change nothing a peer without them sees.
//
// SCTP zero checksum (RFC 9653): each end announces in its INIT that it
// accepts packets without a CRC32c, as DTLS already authenticates every
// record; an end leaves the checksum out only when its peer announced the
// same. Peers that do not know the parameter skip it (its type says so) and
// keep checksumming both ways, Snowflake's pion peers of every version
// included.
func DataPath(se *webrtc.SettingEngine) {
	se.EnableSCTPZeroChecksum(true)
}
