package covertdtls

import (
	"net"

	"github.com/pion/transport/v5"
)

// chromiumNet is a pion network whose UDP sockets send what pion has no
// setting for as Chromium does: the record carrying a ClientHello with
// version DTLS 1.0, as DTLS 1.3 clients do (RFC 9147, 5.1:
// legacy_record_version; pion writes DTLS 1.2), and ICE binding requests
// in Chromium's shape (stun.go). Every other datagram, and the receiving
// side, are untouched; DTLS 1.2 servers (pion's too) accept either version
// on a first flight. Traffic relayed by a TURN server is framed by the
// TURN client and keeps pion's shape.
type chromiumNet struct {
	transport.Net
	sh *Shaper
}

func (n chromiumNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return chromiumConn{c, n.sh}, nil
}

type chromiumConn struct {
	transport.UDPConn
	sh *Shaper
}

func (c chromiumConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	n, err := c.UDPConn.WriteTo(c.sh.chromiumShape(p), addr)
	return min(n, len(p)), err
}

func (c chromiumConn) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	n, err := c.UDPConn.WriteToUDP(c.sh.chromiumShape(p), addr)
	return min(n, len(p)), err
}

func (c chromiumConn) Write(p []byte) (int, error) {
	n, err := c.UDPConn.Write(c.sh.chromiumShape(p))
	return min(n, len(p)), err
}

// chromiumShape returns the datagram p as Chromium would send it.
func (sh *Shaper) chromiumShape(p []byte) []byte {
	return sh.chromiumBinding(legacyRecord(p))
}

// legacyRecord returns p with the version of its first record set to DTLS
// 1.0 if that record is an epoch-0 handshake record starting a
// ClientHello, else p itself. It copies: pion may retransmit its buffer.
func legacyRecord(p []byte) []byte {
	// content type 22, version fefd, epoch 0, ..., handshake type 1
	if len(p) < 14 || p[0] != 22 || p[1] != 0xfe || p[2] != 0xfd || p[3] != 0 || p[4] != 0 || p[13] != 1 {
		return p
	}
	q := append([]byte(nil), p...)
	q[2] = 0xff
	return q
}
