// Package messages encodes and decodes the messages exchanged with the
// broker, byte-compatible with Snowflake v2.14.1 (common/messages). It uses
// the standard library only and validates every field once, here, so that no
// role can forget to: after a decoder returns, each string field carries the
// guarantee documented on its type (for example, a ProxyPollRequest.Type is
// always one of a fixed set and may be a metric label; an Offer is valid
// session description JSON but holds IP addresses and must be scrubbed before
// logging).
//
// # Encoding rules
//
// Messages are JSON as Go's encoding/json writes it: keys in struct order,
// no whitespace, and <, >, & (and U+2028, U+2029) inside strings escaped as
// \u003c, \u003e, \u0026. Proxy messages use Snowflake's Go field names as keys
// and always write every key; client messages use lowercase keys, and
// ClientPollResponse omits empty fields. Encoders produce only the latest
// version (ProxyVersion "1.3", ClientVersion "1.0").
//
// Decoders accept every version Snowflake accepts: proxy messages with major
// version 1 ("1", "1.0" ... "1.3", "1.x"), client requests framed "1.0\n", and
// the legacy bare-offer client body. An unknown major version fails with
// ErrUnknownVersion. A newer feature is recognised by the presence of its
// field, never by the version number: ProxyPollRequest.AcceptedRelayPattern is
// nil when the key is absent or null. As with Go's decoder (and so with
// Snowflake), keys match case-insensitively ("sid" works as "Sid") and
// unknown keys are ignored. Bodies larger than MaxBodySize, invalid UTF-8,
// fields longer than their Max* bound and control characters in string
// fields (except inside the SDP text carried by an offer or answer) are
// rejected.
//
// # Proxy poll (proxy → broker, POST /proxy)
//
// Request (1.0 had only Sid and Version; 1.1 added Type; 1.2 NAT and Clients;
// 1.3 AcceptedRelayPattern):
//
//	{"Sid":"q0Dq3Cq4t2o0kB4QeWm2Vw","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":8,"AcceptedRelayPattern":"snowflake.torproject.net$"}
//
// Responses (RelayURL came with 1.3, NextPoll later without a version bump;
// NAT is the client's NAT type):
//
//	{"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"v=0\\r\\n...\"}","NAT":"unrestricted","NextPoll":20000,"RelayURL":"wss://snowflake.torproject.net/"}
//	{"Status":"no match","Offer":"","NAT":"","NextPoll":20000,"RelayURL":""}
//	{"Status":"incorrect relay pattern","Offer":"","NAT":"","NextPoll":3600000,"RelayURL":""}
//
// # Proxy answer (proxy → broker, POST /answer)
//
//	{"Version":"1.3","Sid":"q0Dq3Cq4t2o0kB4QeWm2Vw","Answer":"{\"type\":\"answer\",\"sdp\":\"v=0\\r\\n...\"}"}
//	{"Status":"success"}
//	{"Status":"client gone"}
//
// The NAT probe server uses the same two messages the other way round: the
// proxy sends a ProxyPollResponse with Status "client match" and receives a
// ProxyAnswerRequest with Sid "stub-sid".
//
// # Client poll (client → broker, POST /client, AMP cache, SQS)
//
// The request is the ASCII version, one line feed (0x0A) and a JSON object:
//
//	 0   1   2   3    4
//	+---+---+---+----+------------------------------------------------+
//	| 1 | . | 0 | LF | {"offer":"...","nat":"...","fingerprint":"..."} |
//	+---+---+---+----+------------------------------------------------+
//
//	1.0
//	{"offer":"{\"type\":\"offer\",\"sdp\":\"v=0\\r\\n...\"}","nat":"unrestricted","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}
//
// offer is the serialized session description embedded as a string; nat is
// optional ("" or absent = unknown); fingerprint is optional (absent =
// DefaultBridgeFingerprint) and must be 20 or 32 bytes of hex. The legacy
// body (first byte '{', see IsLegacyClientPoll) is the bare offer JSON, with
// the NAT type in the Snowflake-NAT-Type header.
//
// The response carries the proxy's answer or an error text:
//
//	{"answer":"{\"type\":\"answer\",\"sdp\":\"v=0\\r\\n...\"}"}
//	{"error":"no snowflake proxies currently available"}
//	{"error":"timed out waiting for answer!"}
//
// Decode errors of a client request have exactly Snowflake's texts ("invalid
// NAT type", "unsupported message version", "no supplied offer", "cannot
// decode fingerprint", "malformed session description: ..."), so the broker
// answers ClientPollResponse{Error: err.Error()}.
//
// # Session descriptions
//
// Offers and answers are WebRTC session descriptions serialized as
//
//	{"type":"offer","sdp":"v=0\r\no=- 7207834799972382898 1795978629 IN IP4 0.0.0.0\r\n..."}
//
// with type one of offer, answer, pranswer and rollback and sdp a string.
// DecodeSessionDescription checks this shape only; parsing the SDP itself is
// the WebRTC stack's job, outside this package.
package messages
