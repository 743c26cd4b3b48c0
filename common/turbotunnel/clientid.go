package turbotunnel

import (
	"crypto/rand"
	"encoding/hex"
	"net"
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
// Converting a ClientID to net.Addr allocates, and so does every call of its
// String method; a relay connection should use [ClientID.Addr] instead, once,
// and pass the same net.Addr to every QueueIncoming call.
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

// Addr returns id as a net.Addr to tag a client's packets with in a
// QueuePacketConn. It differs from the ClientID itself (also a net.Addr) in
// that its String method returns a string made here, once, instead of
// allocating a new one on every call: kcp-go's Listener looks up the session
// of every packet it reads by the packet's address's String, so with a bare
// ClientID each incoming packet would cost an allocation.
//
// All the Addrs of one ClientID are equal (as map keys too), but none of
// them equals the ClientID: a QueuePacketConn keeps separate queues for the
// two forms, so use one form for a client throughout. [ClientIDFromAddr]
// recovers the ClientID.
func (id ClientID) Addr() net.Addr {
	return clientAddr{id: id, s: id.String()}
}

// ClientIDFromAddr returns the ClientID that addr stands for, if addr is a
// ClientID or was returned by [ClientID.Addr].
func ClientIDFromAddr(addr net.Addr) (ClientID, bool) {
	switch a := addr.(type) {
	case ClientID:
		return a, true
	case clientAddr:
		return a.id, true
	}
	return ClientID{}, false
}

// clientAddr is the net.Addr that ClientID.Addr returns: the ClientID and
// its String form. Comparable, so it can key a QueuePacketConn's client map;
// the only way to make one is ClientID.Addr, so s always matches id.
type clientAddr struct {
	id ClientID
	s  string
}

// Network returns "clientid", as ClientID does.
func (a clientAddr) Network() string { return a.id.Network() }

// String returns the ClientID as 16 lowercase hex digits, without
// allocating.
func (a clientAddr) String() string { return a.s }
