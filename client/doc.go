// Package client is an embeddable Flurry client: it reaches a relay (a
// Snowflake bridge) through volunteer proxies, and it is wire-compatible
// with Tor Snowflake v2.14.1, so it works with Snowflake's broker, proxies
// and bridges as well as Flurry's.
//
//	c, err := client.New(client.Config{
//		BrokerURL:  "https://broker.example/",
//		Fronts:     []string{"cdn.example"},
//		ICEServers: []string{"stun:stun.example:3478"},
//		Max:        2,
//	})
//	...
//	conn, err := c.Dial(ctx) // a net.Conn to whatever the relay forwards to (tor)
//	...
//	conn.Close()
//	c.Close()
//
// # What Dial does
//
// Each Dial starts a session with a fresh random ClientID. The session
// collects proxies: for each it creates a WebRTC offer, sends it to the
// broker (HTTPS with optional domain fronting and uTLS: Config.BrokerURL,
// Fronts, UTLSImitate; or through an AMP cache with Config.AMPCacheURL),
// applies the proxy's answer and waits for the DataChannel. On every
// DataChannel it sends the turbotunnel token and the ClientID, then KCP
// packets in encapsulation frames; KCP and smux run over all of the
// session's proxies together, so the stream survives proxies
// coming and going and no byte is lost:
//
//	stream ⇄ smux v2 ⇄ KCP ⇄ multipath packet conn ⇄ DataChannel 1 ⇄ proxy 1 ⇄ relay
//	                                               ⇄ DataChannel 2 ⇄ proxy 2 ⇄
//
// Dial returns once the first proxy is connected (or fails with ErrNoProxy
// when its context ends first). The session keeps Config.Max proxies
// connected until the stream is closed.
//
// # Beyond Snowflake
//
//   - Multipath: with Max ≥ 2 every connected proxy carries packets at
//     once (Snowflake keeps the others idle), so losing one costs only the
//     retransmission of the packets it held, and each proxy is the others'
//     warm spare. A lost proxy is replaced in the background.
//   - Fast failover: a proxy is dropped as soon as its DataChannel closes,
//     ICE hears nothing from it (data or keepalive) for DeadPeerTimeout (1 s),
//     or packets the relay answers went out through it and nothing came back
//     for ReplyTimeout (2 s, or twice KCP's retransmission timeout if longer;
//     the reason is ErrNoReply; during a download a silent proxy is sent a
//     KCP window probe, which the relay answers). The replacement
//     rendezvous starts before that, once ICE has heard nothing
//     mid-transfer for longer than a live proxy stays silent; a quiet
//     proxy heard again after its replacement connected is closed
//     (ErrReplaced). A new proxy's first packet tells the relay what
//     arrived through the lost one (a window probe with the session's
//     acknowledgement), so that it resends only what is missing.
//     Snowflake waits up to 20 s of silence and then up to 10 s for its
//     next collection tick.
//   - Deadlines on ICE gathering (Snowflake waits forever), on the broker
//     exchange and on the DataChannel open.
//   - NAT detection runs once per Client, not once per connection.
//   - No globals, no log.Fatal: several Clients run in one process, errors
//     are returned, logs go to Config.Logger and steps to Config.Events.
//
// # Behind a SOCKS5 proxy
//
// With Config.SOCKS5Proxy (tor's TOR_PT_PROXY) all of the client's own
// traffic goes through a SOCKS5 proxy: broker requests (HTTPS, uTLS,
// fronted, AMP cache, SQS) through CONNECT (golang.org/x/net/proxy), NAT
// detection, STUN and WebRTC through UDP ASSOCIATE
// (client/internal/socks5udp, handed to pion as its network by
// client/internal/proxynet), so the proxy must support UDP. Names are
// resolved by the proxy. CheckSOCKS5Proxy makes the test association a
// pluggable transport makes before it reports PROXY DONE.
//
// # Covert DTLS
//
// Config.CovertDTLS (covertdtls-config, covertdtls-fingerprint) shapes the
// DTLS ClientHello as Snowflake's client does (package common/covertdtls).
// The client offers, so against pion and browser proxies it is the DTLS
// server and the proxy's hello is the one a censor sees; see
// docs/fingerprinting.md.
//
// # Not supported
//
// Upstream proxies other than SOCKS5 (HTTP and SOCKS4 proxies cannot carry
// UDP).
//
// # SQS rendezvous
//
// With Config.SQSQueueURL and SQSCredentials (sqsqueue, sqscreds) the poll
// request goes through the broker's Amazon SQS queue and the answer comes
// back through a queue of the client's own, which the client deletes
// afterwards. It needs Config.NewSQSRendezvous set to New of package
// client/sqs: the AWS SDK it links is left to the programs that offer SQS
// (flurry-client does).
package client
