package covertdtls

import (
	"net"

	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
)

// legacyRecordNet is a pion network whose UDP sockets send the record
// carrying a ClientHello with version DTLS 1.0, as DTLS 1.3 clients
// (Chromium) do (RFC 9147, 5.1: legacy_record_version); pion writes DTLS
// 1.2 there and has no setting for it. Every other datagram, and the
// receiving side, are untouched; DTLS 1.2 servers (pion's too) accept
// either version on a first flight. Traffic relayed by a TURN server is
// framed by the TURN client and keeps pion's version.
type legacyRecordNet struct{ transport.Net }

func (n legacyRecordNet) ListenUDP(network string, laddr *net.UDPAddr) (transport.UDPConn, error) {
	c, err := n.Net.ListenUDP(network, laddr)
	if err != nil {
		return nil, err
	}
	return legacyRecordConn{c}, nil
}

type legacyRecordConn struct{ transport.UDPConn }

func (c legacyRecordConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	return c.UDPConn.WriteTo(legacyRecord(p), addr)
}

func (c legacyRecordConn) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	return c.UDPConn.WriteToUDP(legacyRecord(p), addr)
}

func (c legacyRecordConn) Write(p []byte) (int, error) {
	return c.UDPConn.Write(legacyRecord(p))
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

// mimicNet returns n (nil: the host's network) with legacyRecordNet's
// change.
func mimicNet(n transport.Net) (transport.Net, error) {
	if n == nil {
		var err error
		if n, err = stdnet.NewNet(); err != nil {
			return nil, err
		}
	}
	return legacyRecordNet{n}, nil
}
