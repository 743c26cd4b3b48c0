// Package multipath is the client's turbotunnel packet conn: a
// net.PacketConn for KCP that sends and receives over every carrier
// (connected proxy) it currently has, and keeps working while carriers come
// and go.
//
// Snowflake's client uses one carrier at a time (its RedialPacketConn) and
// dials the next only after the current one has failed. Here the
// owner adds carriers whenever it has them, and each carrier runs one writer
// goroutine that takes packets from a shared send queue and one reader
// goroutine that puts what it receives on a shared receive queue:
//
//	KCP ──WriteTo──▶ send queue ──▶ writer 1 ──▶ carrier 1 ──▶ proxy 1 ──┐
//	                            └─▶ writer 2 ──▶ carrier 2 ──▶ proxy 2 ──┴▶ relay
//	KCP ◀─ReadFrom── recv queue ◀── reader 1 ◀── carrier 1 ◀── ...
//	                            ◀── reader 2 ◀── carrier 2 ◀── ...
//
// A packet goes to whichever carrier is ready first, so a fast proxy carries
// more than a slow one and a blocked carrier (its DataChannel send buffer
// full) carries nothing more. When a carrier dies, only the packets it held
// are lost and KCP retransmits them over the others; with a single carrier
// packets wait in the send queue until the owner adds the next one. The
// relay does the same on its side: every WebSocket of a ClientID drains
// that client's one outgoing queue.
//
// Both queues hold at most QueueSize packets; a full queue drops the packet
// and counts it (KCP retransmits), so neither KCP nor a carrier ever blocks
// on the other.
//
// A carrier can stay open while nothing passes (a proxy alive to WebRTC
// whose path to the relay died). The owner may give New a ReplyWatch that
// says which packets the far end answers; the Conn then drops a carrier
// (with ErrNoReply) when such a packet went out through it and no answer
// came back in time: nothing on any carrier, or, under sustained traffic,
// nothing on this one while the others receive.
//
// The owner may also cap how many carriers carry packets at once (New's
// serving): the others stand by, sending only keepalives, and one takes
// over when a carrier in use leaves, is demoted, or is bypassed by the far
// end (a packet arrives through the standby).
package multipath
