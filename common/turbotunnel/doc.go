// Package turbotunnel carries a KCP session over a succession of short-lived
// carriers, so that a client's session survives the death of any one proxy.
// It is wire-compatible with Snowflake v2.14.1's common/turbotunnel.
//
// # The stream prefix
//
// A client opens every carrier (a DataChannel through a proxy, which becomes
// a WebSocket to the relay) with two fixed-size fields, then encapsulated
// KCP packets (see package encapsulation):
//
//	+--------------------------------+--------------------------------+----------------
//	| Token (8 bytes)                | ClientID (8 bytes)             | encapsulated
//	| 12 93 60 5d 27 81 75 f5        | random, fixed for the session  | KCP packets ...
//	+--------------------------------+--------------------------------+----------------
//
// The Token tells the relay that the client speaks turbotunnel; the ClientID
// tells it which KCP session the packets belong to, whichever carrier they
// arrive on.
//
// # Server side: QueuePacketConn
//
// The relay runs one KCP listener (kcp.ServeConn) per [QueuePacketConn]. Each
// relay connection's reader puts the packets it decodes into the shared
// incoming queue with [QueuePacketConn.QueueIncoming], tagged with the
// connection's ClientID; KCP reads them with ReadFrom. KCP's replies go
// through WriteTo into a per-ClientID outgoing queue, which the relay
// connections of that client drain with [QueuePacketConn.OutgoingQueue].
// Idle clients' queues expire. All queues are bounded: a full queue drops the
// packet and counts it ([QueuePacketConn.Stats]); KCP retransmits.
//
// # Parameters
//
// Both ends of a session must configure KCP and smux alike. [ConfigureKCP],
// [ClientSmuxConfig] and [RelaySmuxConfig] apply Snowflake's values (the
// constants in params.go, each with its reason); Flurry's client, relay and
// load generator use them and nothing else.
//
// # Buffers
//
// Packets live in MTU-sized buffers from a pool. A QueuePacketConn copies
// the packets it is given, so callers (and kcp-go, which reuses the slice it passes to
// WriteTo: Snowflake issue 40260) may reuse their slices at once. A slice
// received from an OutgoingQueue belongs to the receiver, who gives it back
// with [QueuePacketConn.Restore] once written, exactly once, and never
// touches it afterwards.
package turbotunnel
