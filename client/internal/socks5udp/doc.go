// Package socks5udp sends UDP datagrams through a SOCKS5 proxy with the
// UDP ASSOCIATE command of RFC 1928 (section 7), which golang.org/x/net/proxy
// does not implement (it only CONNECTs).
//
// # The association
//
// Client.Associate opens a TCP control connection to the proxy, greets it
// (no authentication, or username and password as in RFC 1929 when the
// Config has a username) and sends
//
//	+-----+-----+-------+------+----------+----------+
//	| VER | CMD |  RSV  | ATYP | DST.ADDR | DST.PORT |
//	+-----+-----+-------+------+----------+----------+
//	|  5  |  3  |   0   |  1   | 0.0.0.0  |    0     |
//	+-----+-----+-------+------+----------+----------+
//
// (all zeros: the client does not know the address it will send from, as
// seen by the proxy). The reply carries the relay address BND.ADDR:BND.PORT;
// an unspecified BND.ADDR (0.0.0.0 or ::) means the proxy's own address.
// The association lives as long as the control connection: the proxy ends
// it by closing that connection, and PacketConn.Close closes it.
//
// # The datagrams
//
// Every datagram to and from the relay starts with this header, followed
// by the payload:
//
//	+-----+-----+------+------+----------+----------+----------+
//	| RSV | RSV | FRAG | ATYP | DST.ADDR | DST.PORT |   DATA   |
//	+-----+-----+------+------+----------+----------+----------+
//	|  0  |  0  |  1   |  1   | variable |    2     | variable |
//	+-----+-----+------+------+----------+----------+----------+
//
//	ATYP 1: DST.ADDR is 4 bytes, an IPv4 address      (header: 10 bytes)
//	ATYP 4: DST.ADDR is 16 bytes, an IPv6 address     (header: 22 bytes)
//	ATYP 3: DST.ADDR is one length byte and a name    (header: 7 + length)
//
// DST.PORT is big-endian. To the relay, DST is the destination; from the
// relay, it is the address the datagram came from. This package never
// fragments (FRAG is 0) and drops every received datagram with FRAG other
// than 0, a non-zero RSV, an unknown ATYP, a truncated header or a name for
// a source address.
//
// # The PacketConn
//
// PacketConn is a net.PacketConn over one association. Its LocalAddr is the
// relay address, which is where the proxy receives datagrams for this
// association. WriteTo accepts a *net.UDPAddr or a DomainAddr (a name the
// proxy resolves). ReadFrom reads each datagram straight into the caller's
// buffer and moves the payload to its start, so a PacketConn keeps no read
// buffer; the write buffer is small and bigger datagrams are built in a
// buffer that is not kept. The PacketConn also has the method set of pion's
// transport.UDPConn, so pion can use it as a UDP socket.
//
// One goroutine per association watches the control connection; when the
// proxy closes it, reads and writes fail with an error matching
// ErrAssociationEnded (and net.ErrClosed).
package socks5udp
