package turbotunnel

import (
	"crypto/rand"
	"encoding/hex"
)

// TokenLen is the length of Token and of a ClientID, in bytes.
const TokenLen = 8

// Token is the 8-byte value a turbotunnel client sends first on every
// carrier (Snowflake's turbotunnel token). Treat it as a constant.
var Token = [TokenLen]byte{0x12, 0x93, 0x60, 0x5d, 0x27, 0x81, 0x75, 0xf5}

// ClientID identifies a client's KCP session across carriers: 8 random
// bytes, sent right after Token on every carrier. It is a net.Addr so that it
// can be the peer address of a QueuePacketConn.
//
// Converting a ClientID to net.Addr allocates; a relay connection should do
// it once and pass the same net.Addr to every QueueIncoming call.
type ClientID [TokenLen]byte

// NewClientID returns a random ClientID from crypto/rand.
func NewClientID() ClientID {
	var id ClientID
	// crypto/rand.Read never returns an error (it aborts the program
	// instead when the system has no randomness).
	_, _ = rand.Read(id[:])
	return id
}

// Network returns "clientid".
func (id ClientID) Network() string { return "clientid" }

// String returns the ClientID as 16 lowercase hex digits.
func (id ClientID) String() string { return hex.EncodeToString(id[:]) }
