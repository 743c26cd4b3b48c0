// Package nat finds out whether the client is behind a NAT that proxies
// behind restrictive NATs can still reach, and decides what to tell the
// broker while that is not known.
//
// # The mapping test (RFC 5780 section 4.3)
//
// Probe sends two STUN Binding Requests from one UDP4 socket:
//
//	Test I   to the server's primary address P:p
//	         reply: XOR-MAPPED-ADDRESS M1, OTHER-ADDRESS A:a
//	Test II  to the alternate address with the primary port, A:p
//	         reply: XOR-MAPPED-ADDRESS M2
//
// If M1 equals M2 the NAT maps independently of the destination
// ("endpoint-independent mapping"): the client is unrestricted and any
// proxy can reach it. If they differ the mapping depends on the destination
// and the client is restricted: only an unrestricted proxy will do.
// A server without RFC 5780 support sends no OTHER-ADDRESS and the result
// is unknown. This is what Snowflake's client does (IPv4 only, mapping test
// only; the filtering test is not used).
//
// # The policy
//
// While the type is unknown Policy claims unrestricted to the broker, which
// then prefers restricted proxies and keeps unrestricted ones for clients
// that need them. If a DataChannel then fails to open after such a claim,
// the policy stops claiming and sends the real "unknown" from then on
// (Snowflake's NATPolicy).
package nat
