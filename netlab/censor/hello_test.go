package censor

import "slices"

// The single-datagram hello parsers the tests read captures with; the
// censor programs reassemble hellos instead (HelloReassembler).

// dtlsHandshake returns the body of the first whole, unfragmented
// handshake message of type typ in the epoch-0 handshake records of the
// datagram b.
func dtlsHandshake(b []byte, typ uint8) ([]byte, bool) {
	for len(b) > 0 {
		r, rest, ok := nextRecord(b)
		if !ok {
			return nil, false
		}
		b = rest
		if r.typ != contentHandshake || r.epoch != 0 {
			continue
		}
		m := r.body
		for len(m) >= dtlsHandshakeHeaderLen {
			length := int(m[1])<<16 | int(m[2])<<8 | int(m[3])
			off := int(m[6])<<16 | int(m[7])<<8 | int(m[8])
			flen := int(m[9])<<16 | int(m[10])<<8 | int(m[11])
			if len(m)-dtlsHandshakeHeaderLen < flen {
				break
			}
			if m[0] == typ && off == 0 && flen == length {
				return m[dtlsHandshakeHeaderLen : dtlsHandshakeHeaderLen+flen], true
			}
			m = m[dtlsHandshakeHeaderLen+flen:]
		}
	}
	return nil, false
}

// ClientHelloOf parses the first DTLS ClientHello in the datagram b (a UDP
// payload: one or more DTLS records). It reports false if b holds no whole
// and well-formed ClientHello.
func ClientHelloOf(b []byte) (*ClientHello, bool) {
	body, ok := dtlsHandshake(b, handshakeClientHello)
	if !ok {
		return nil, false
	}
	h, ok := parseClientHello(slices.Clone(body), true)
	if !ok || h.Truncated {
		return nil, false
	}
	return h, true
}

// JA4OfDatagram returns the JA4 of the first DTLS ClientHello in the
// datagram b (a UDP payload), as the package doc describes it.
func JA4OfDatagram(b []byte) (string, bool) {
	h, ok := ClientHelloOf(b)
	if !ok {
		return "", false
	}
	return h.JA4(), true
}
