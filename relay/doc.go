// Package relay is Flurry's bridge (Snowflake's "server"): it accepts
// WebSocket connections from proxies, each carrying one client's
// turbotunnel packets, runs the KCP and smux server side with Snowflake's
// parameters, and forwards every smux stream to tor (ORPort or ExtORPort)
// or, in standalone mode, to any TCP address.
//
// The byte stream on each WebSocket, proxy to relay:
//
//	+----------------+-------------------+--------------------------------+
//	| token, 8 bytes | ClientID, 8 bytes | encapsulated KCP packets ...   |
//	| 12 93 60 5d .. |                   | (common/encapsulation framing) |
//	+----------------+-------------------+--------------------------------+
//
// and relay to proxy only encapsulated KCP packets. A client's session
// belongs to its ClientID, not to one WebSocket: a new WebSocket with the
// same ClientID continues the same KCP session, and several WebSockets with
// one ClientID at once all carry it, the relay spreading outgoing packets
// across them. Clients are spread over several KCP state machines by a
// keyed hash of the ClientID.
package relay
