// Package socks5test is a SOCKS5 proxy for tests (RFC 1928, with RFC 1929
// username and password): CONNECT and UDP ASSOCIATE, on loopback only, and
// it counts what it relays, so a test can check that traffic really went
// through it. Like net/http/httptest it listens on 127.0.0.1:0.
//
// It relays only to loopback addresses: a CONNECT or a datagram to any
// other address (the only name it knows is "localhost") is refused and counted
// in Stats.Refused.
//
// Each UDP association has one UDP socket on 127.0.0.1, which is both the
// relay address given to the client (BND.ADDR:BND.PORT) and the address
// datagrams leave from, as many proxies do. The client's address is
// learnt from the first datagram that comes from the control connection's
// IP address with a well-formed header (RSV 0, FRAG 0, a known ATYP);
// datagrams from the client are unwrapped and sent on, datagrams from any
// other address are wrapped and sent to the client. The header codec here
// is written independently of package socks5udp, so tests of one check the
// other.
package socks5test
