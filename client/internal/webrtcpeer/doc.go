// Package webrtcpeer opens WebRTC DataChannels to proxies: the client side
// of Snowflake's WebRTC leg, with the gaps of Snowflake's client closed.
//
// Dialer.Connect makes one offer (one reliable, ordered DataChannel), hands
// it to a negotiation function (the rendezvous with the broker), applies the
// proxy's answer and returns a Peer once the DataChannel is open. Each step
// has a deadline: ICE gathering (Snowflake waits forever), the DataChannel
// open (10 s, as Snowflake) and the whole attempt through the context.
//
// A Peer is a byte stream over the DataChannel: every Write is one
// DataChannel message, Read returns the bytes of the received messages in
// order (message boundaries are not kept; the turbotunnel framing above does
// not need them). The channel is detached (pion's DetachDataChannels), so
// there is no OnMessage callback and no io.Pipe, and writes block when the
// SCTP send buffer is full, which gives backpressure.
//
// A Peer dies, and its Done channel closes, when any of these happens:
//
//   - the DataChannel or the PeerConnection closes (the proxy went away
//     cleanly);
//   - ICE loses the proxy: no packet (data or keepalive) for
//     Config.DeadPeerTimeout, with keepalives sent four times as often, so
//     a proxy killed without a word is noticed within about a second.
//     Before that a Peer that was carrying data may be silent, then quiet
//     (Peer.OnSilence), which lets the caller seek a replacement while it
//     may still come back;
//   - nothing arrives for Config.IdleTimeout (20 s, Snowflake's staleness
//     timeout);
//   - Close.
//
// ICE candidates: by default addresses that are not publicly routable are
// left out of the offer (Snowflake's filter) and mDNS is off. With
// Config.LoopbackOnly pion uses only loopback interfaces and addresses and
// no STUN server, for tests and local demonstrations. With Config.Net (a
// SOCKS5 proxy's network, package proxynet) every candidate is gathered
// through that network, and the offer is stripped of local-address
// candidates unless Config.KeepLocalAddresses.
package webrtcpeer
