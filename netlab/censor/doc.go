// Package censor holds the censor programs of Flurry's network lab: small
// models of real censorship events that netlab's middlebox runs on every IP
// packet it forwards between the client-side namespace and the outside.
//
// A Program sees each packet once, in order, from one goroutine, together
// with its Direction (Outbound: from the client side to the outside;
// Inbound: the reverse) and the time, and returns Pass or Drop. Parse builds
// a Chain of programs from a comma-separated list of names (the netlab flag
// value); Names lists them:
//
//	sni-block            TCP to blocked addresses, TLS hellos with a blocked SNI
//	dtls-ja4-block       DTLS flows whose ClientHello's JA4 is listed, after a delay
//	dtls-bytes-2022      DTLS hellos with pion's 2021-2022 supported_groups bytes
//	dtls-allowlist       DTLS flows whose ClientHello's JA4 is not allowed
//	tunnel-shape         DTLS flows whose first records look like TLS inside
//	cut-after-handshake  DTLS flows after the handshake and a few KB of data
//	udp-block            all UDP
//	stun-block           STUN binding requests and responses
//	udp-throttle         UDP beyond a rate per flow
//
// Each program's doc comment names the event it models and says exactly
// what it matches.
//
// # Packets
//
// IPv4 and IPv6 headers, UDP and TCP are decoded with gopacket's layers.
// IPv6 packets whose first next-header is an extension header, and IPv4
// fragments other than the first, are passed unjudged by all programs but
// udp-block (which judges by the IP protocol number alone).
//
// DTLS records and the DTLS ClientHello are parsed here (gopacket knows TLS
// but not DTLS):
//
//	DTLS record (RFC 6347 section 4.1), 13-byte header:
//	+------+---------+-------+-----------------+--------+----------+
//	| type | version | epoch | sequence number | length | fragment |
//	|  1   |    2    |   2   |        6        |   2    |  length  |
//	+------+---------+-------+-----------------+--------+----------+
//	DTLS handshake message (section 4.2.2), 12-byte header:
//	+----------+--------+-------------+-----------------+-------------+------+
//	| msg_type | length | message_seq | fragment_offset | fragment_len | body |
//	|    1     |   3    |      2      |        3        |      3       |      |
//	+----------+--------+-------------+-----------------+-------------+------+
//	ClientHello body: client_version(2) random(32) session_id(1+n)
//	cookie(1+n, DTLS only) cipher_suites(2+n) compression_methods(1+n)
//	extensions(2+n, each type(2) length(2) data)
//
// dtls-ja4-block and dtls-allowlist put a ClientHello sent in several
// handshake fragments back together (HelloReassembler), in one datagram or
// across several, as a censor must to see Chromium's: with its ML-KEM key
// share it does not fit one datagram. The fragments pass until the last
// one, on which the flow is judged.
//
// # JA4
//
// JA4 (FoxIO's TLS client fingerprint, technical_details/JA4.md in the
// FoxIO-LLC/ja4 repository) is computed as nDPI's ndpi_compute_ja4 computes
// it for DTLS (src/lib/protocols/tls.c in ntop/nDPI):
//
//	a: "d" (DTLS; "t" for TLS over TCP)
//	   version: the numerically highest of the legacy client_version and the
//	     non-GREASE supported_versions values, as nDPI takes it; for DTLS this
//	     means a hello offering DTLS 1.3 (0xfefc) with a legacy version of
//	     DTLS 1.2 (0xfefd) reads "d2", where FoxIO's "highest version" would
//	     read "d3" ("d1" 0xfeff, "d2" 0xfefd, "d3" 0xfefc, "00" unknown)
//	   "d" if the SNI extension names a domain, "i" if it is absent or an
//	     IP address literal
//	   cipher count and extension count (GREASE excluded, SNI and ALPN
//	     included), two decimal digits each, at most 99
//	   first and last characters of the first ALPN protocol, "00" if none; if
//	     either is not ASCII alphanumeric, the first and last hex digits of
//	     the protocol's bytes, as the FoxIO spec says
//	b: the first 12 hex digits of sha256 of the sorted, comma-separated
//	   4-digit hex cipher suites; "000000000000" if there are none
//	c: the first 12 hex digits of sha256 of the sorted hex extensions without
//	   SNI (0x0000) and ALPN (0x0010), then "_" and the signature algorithms
//	   in the order sent (no "_" if there are none); "000000000000" if there
//	   are no extensions
//
// The default block list of dtls-ja4-block (DefaultBlockJA4) was derived in
// the package tests from hellos sent by a real pion/dtls v3 client, with
// and without a HelloVerifyRequest cookie.
//
// # State
//
// Per-flow state is kept in a table bounded in entries (Options.MaxFlows)
// and in idle time (Options.FlowIdle), least recently used first out. A
// flow is its 5-tuple seen from the client side, so both directions of a
// flow share one entry. Judge allocates only when it parses a handshake
// packet or starts tracking a new flow.
package censor
