package loadgen

import (
	"encoding/binary"
	"io"
	"net"
)

// The mixed target's protocol. A connection starts with one byte:
//
//	'B'  bulk: the target writes an endless stream and ignores input.
//	'I'  interactive: then any number of requests, each
//	     +--------------------------+------------------------+----------+
//	     | response length (uint32) | request length (uint32) | request  |
//	     +--------------------------+------------------------+----------+
//	     big-endian; the target reads and discards the request, then
//	     writes response-length bytes.
const (
	mixedBulk        = 'B'
	mixedInteractive = 'I'
	// mixedHeaderLen is an interactive request's header.
	mixedHeaderLen = 8
	// Bounds of one request, so that a stray peer cannot make the target
	// read or write without end.
	maxMixedRequest  = 1 << 20
	maxMixedResponse = 16 << 20
)

// appendMixedRequest appends an interactive request's header to b.
func appendMixedRequest(b []byte, response, request int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(response))
	return binary.BigEndian.AppendUint32(b, uint32(request))
}

// serveMixed serves one connection of a TargetMixed target with buf as its
// buffer; it returns when the connection ends or breaks the protocol.
func (t *Target) serveMixed(c net.Conn, buf []byte) {
	var kind [1]byte
	if _, err := io.ReadFull(c, kind[:]); err != nil {
		return
	}
	t.in.Add(1)
	for i := range buf {
		buf[i] = byte(i)
	}
	switch kind[0] {
	case mixedBulk:
		for {
			n, err := c.Write(buf)
			t.out.Add(int64(n))
			if err != nil {
				return
			}
		}
	case mixedInteractive:
		var hdr [mixedHeaderLen]byte
		for {
			if _, err := io.ReadFull(c, hdr[:]); err != nil {
				return
			}
			response := int64(binary.BigEndian.Uint32(hdr[:4]))
			request := int64(binary.BigEndian.Uint32(hdr[4:]))
			if response > maxMixedResponse || request > maxMixedRequest {
				return
			}
			n, err := io.CopyN(io.Discard, c, request)
			t.in.Add(mixedHeaderLen + n)
			if err != nil {
				return
			}
			for response > 0 {
				m, err := c.Write(buf[:min(int64(len(buf)), response)])
				t.out.Add(int64(m))
				if err != nil {
					return
				}
				response -= int64(m)
			}
		}
	}
}
