// Package tunnelseal authenticates and encrypts turbotunnel packets between
// a Flurry client and a Flurry relay under a key that no proxy learns, so
// that a proxy which has carried a session (and so knows its ClientID) can
// neither inject packets into it nor pull its downstream to itself.
//
// Snowflake's turbotunnel sends the ClientID in clear on every carrier and
// packets unauthenticated: any proxy that once carried a session can open
// carriers of its own with the ClientID (the relay then spreads the
// session's downstream over them) or feed forged KCP segments to the
// session (a few RST-like segments end it). A sealed session closes both.
//
// # Keys
//
// The relay has a long-term X25519 key pair; its public key S goes into
// the bridge line as relay-key=BASE64 (Snowflake's client ignores unknown
// arguments). A client with that key starts each session (each Dial) with a
// fresh ephemeral X25519 key pair (e, E) and derives, with SHA-256:
//
//	shared   = X25519(e, S)                       (= X25519(s, E) at the relay)
//	K        = HKDF(secret shared, salt E || S, info "flurry tunnelseal v1 session")
//	ClientID = SHA-256("flurry tunnelseal v1 client id" || E)[:8]
//
// The ClientID is bound to E: presenting a session's ClientID with another
// ephemeral key needs a second preimage of 64 bits of SHA-256; presenting it
// with E needs e.
//
// # Carriers
//
// Each carrier (one proxy's WebSocket) starts with a join header instead of
// Snowflake's token and ClientID:
//
//	 0       8      16                      48       56               72               88
//	+-------+-------+-----------------------+--------+----------------+----------------+
//	| Token | Clien | E, the client's       | join   | carrier nonce  | tag (16 bytes) |
//	| 8 B   | tID   | ephemeral public key  | seq J  | N (16 bytes)   |                |
//	|       | 8 B   | (32 bytes)            | 8 B BE |                |                |
//	+-------+-------+-----------------------+--------+----------------+----------------+
//
// Token (SealedToken) differs from Snowflake's turbotunnel token, so a relay
// tells the two protocols apart by the first 8 bytes; a Snowflake client
// always sends Snowflake's token and is served exactly as before. J numbers
// the session's carriers from 1; N is random. The carrier's keys are
//
//	c2r || r2c = HKDF(secret K, salt N, info "flurry tunnelseal v1 carrier" || J)   (2 x 32 bytes)
//
// and tag is the ChaCha20-Poly1305 tag, under c2r and counter 0, of an empty
// message whose additional data is the header's first 72 bytes: it proves
// that the carrier's sender knows K. The relay refuses a join whose tag is
// wrong, whose ClientID is not E's, or whose J it has already seen for the
// session (a window of 64 join numbers behind the highest seen): a proxy
// that recorded a join header cannot replay it on a carrier of its own.
//
// After the header, both directions carry encapsulation data chunks exactly
// as Snowflake does, except that each chunk's data is one KCP packet sealed
// with ChaCha20-Poly1305 (16 bytes longer). The nonce is a counter per
// carrier and direction, never sent: 4 zero bytes then the counter as 8
// bytes big-endian, from 1 for client to relay (0 was the tag) and from 0
// for relay to client. A carrier is a reliable ordered byte stream (a
// reliable DataChannel, then a WebSocket), so both ends know the counter;
// a chunk that does not open (forged, altered, replayed, reordered or
// dropped by the proxy) ends the carrier, never the session, and KCP never
// sees it. Padding chunks carry no data and are skipped unauthenticated.
package tunnelseal
