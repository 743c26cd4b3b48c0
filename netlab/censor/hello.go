package censor

import (
	"crypto/sha256"
	"encoding/hex"
	"net/netip"
	"slices"
	"strings"
)

// DTLS and TLS constants (RFC 6347, RFC 8446).
const (
	contentChangeCipherSpec = 20
	contentAlert            = 21
	contentHandshake        = 22
	contentApplicationData  = 23

	handshakeClientHello = 1
	handshakeServerHello = 2

	dtlsRecordHeaderLen    = 13
	dtlsHandshakeHeaderLen = 12
	tlsRecordHeaderLen     = 5
	tlsHandshakeHeaderLen  = 4

	extServerName          = 0x0000
	extSupportedGroups     = 0x000a
	extSignatureAlgorithms = 0x000d
	extALPN                = 0x0010
	extSupportedVersions   = 0x002b
)

// dtlsRecord is one DTLS record; body points into the datagram.
type dtlsRecord struct {
	typ     uint8
	version uint16
	epoch   uint16
	body    []byte
}

// nextRecord splits the first DTLS record off b. It reports false if b
// does not start with a whole DTLS record (content type 20 to 25, version
// major byte 0xfe).
func nextRecord(b []byte) (r dtlsRecord, rest []byte, ok bool) {
	if len(b) < dtlsRecordHeaderLen || b[0] < contentChangeCipherSpec || b[0] > 25 || b[1] != 0xfe {
		return r, nil, false
	}
	n := int(b[11])<<8 | int(b[12])
	if len(b)-dtlsRecordHeaderLen < n {
		return r, nil, false
	}
	r = dtlsRecord{
		typ:     b[0],
		version: uint16(b[1])<<8 | uint16(b[2]),
		epoch:   uint16(b[3])<<8 | uint16(b[4]),
		body:    b[dtlsRecordHeaderLen : dtlsRecordHeaderLen+n],
	}
	return r, b[dtlsRecordHeaderLen+n:], true
}

// isDTLS reports whether the datagram b starts with a DTLS record header.
func isDTLS(b []byte) bool {
	_, _, ok := nextRecord(b)
	return ok
}

// maybeClientHello is a cheap test, without parsing, that the datagram b
// may carry a DTLS ClientHello: a first record of type handshake in epoch 0
// whose first message is a ClientHello.
func maybeClientHello(b []byte) bool {
	return len(b) >= dtlsRecordHeaderLen+dtlsHandshakeHeaderLen &&
		b[0] == contentHandshake && b[1] == 0xfe && b[3] == 0 && b[4] == 0 &&
		b[dtlsRecordHeaderLen] == handshakeClientHello
}

// Extension is one ClientHello extension; Data aliases ClientHello's copy
// of the datagram.
type Extension struct {
	Type uint16
	Data []byte
}

// ClientHello is a parsed DTLS (or TLS) ClientHello. Its byte slices alias
// a private copy of the input, never the caller's buffer.
type ClientHello struct {
	DTLS                bool
	Version             uint16 // legacy client_version
	Random              []byte
	SessionID           []byte
	Cookie              []byte // DTLS only
	CipherSuites        []uint16
	CompressionMethods  []byte
	Extensions          []Extension // in the order sent, GREASE included
	ServerName          string      // the first host_name of server_name
	ALPN                []string
	SupportedVersions   []uint16
	SupportedGroups     []uint16
	SignatureAlgorithms []uint16
	// Truncated: the hello ended before its declared length (a TLS hello
	// split over TCP segments); the fields parsed so far are set, but its
	// JA4 does not describe the whole hello.
	Truncated bool
}

// tlsClientHello parses the TLS ClientHello that a TCP payload starting a
// TLS flow carries, possibly cut short by the segment's end.
func tlsClientHello(b []byte) (*ClientHello, bool) {
	if len(b) < tlsRecordHeaderLen+tlsHandshakeHeaderLen || b[0] != contentHandshake || b[1] != 3 ||
		b[tlsRecordHeaderLen] != handshakeClientHello {
		return nil, false
	}
	rlen := int(b[3])<<8 | int(b[4])
	m := b[tlsRecordHeaderLen:]
	if len(m) > rlen {
		m = m[:rlen]
	}
	length := int(m[1])<<16 | int(m[2])<<8 | int(m[3])
	m = m[tlsHandshakeHeaderLen:]
	truncated := len(m) < length
	if !truncated {
		m = m[:length]
	}
	h, ok := parseClientHello(slices.Clone(m), false)
	if !ok {
		return nil, false
	}
	h.Truncated = h.Truncated || truncated
	return h, true
}

// reader reads big-endian fields; any short read clears ok and returns
// zeros.
type reader struct {
	b  []byte
	ok bool
}

func (r *reader) bytes(n int) []byte {
	if !r.ok || n < 0 || len(r.b) < n {
		r.ok = false
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() int {
	v := r.bytes(1)
	if v == nil {
		return 0
	}
	return int(v[0])
}

func (r *reader) u16() int {
	v := r.bytes(2)
	if v == nil {
		return 0
	}
	return int(v[0])<<8 | int(v[1])
}

// vec8 and vec16 read a vector with a 1- or 2-byte length.
func (r *reader) vec8() []byte  { return r.bytes(r.u8()) }
func (r *reader) vec16() []byte { return r.bytes(r.u16()) }

func u16s(b []byte) []uint16 {
	v := make([]uint16, 0, len(b)/2)
	for i := 0; i+1 < len(b); i += 2 {
		v = append(v, uint16(b[i])<<8|uint16(b[i+1]))
	}
	return v
}

// parseClientHello parses a ClientHello body. It reports false if the
// body ends before the cipher suites; a body that ends later yields a
// hello marked Truncated.
func parseClientHello(b []byte, dtls bool) (*ClientHello, bool) {
	r := reader{b: b, ok: true}
	h := &ClientHello{DTLS: dtls}
	h.Version = uint16(r.u16())
	h.Random = r.bytes(32)
	h.SessionID = r.vec8()
	if dtls {
		h.Cookie = r.vec8()
	}
	cs := r.vec16()
	if !r.ok || len(cs)%2 != 0 {
		return nil, false
	}
	h.CipherSuites = u16s(cs)
	h.CompressionMethods = r.vec8()
	if !r.ok {
		h.Truncated = true
		return h, true
	}
	if len(r.b) == 0 {
		return h, true // no extensions
	}
	exts := r.vec16()
	if !r.ok {
		// Parse the extensions that are whole in what is left.
		exts, h.Truncated = r.b, true
		if len(exts) >= 2 {
			exts = exts[2:]
		}
	} else if len(r.b) != 0 {
		return nil, false // bytes after the extensions
	}
	er := reader{b: exts, ok: true}
	for len(er.b) > 0 {
		typ := er.u16()
		data := er.vec16()
		if !er.ok {
			if h.Truncated {
				break
			}
			return nil, false
		}
		h.Extensions = append(h.Extensions, Extension{Type: uint16(typ), Data: data})
		h.parseExtension(uint16(typ), data)
	}
	return h, true
}

// parseExtension fills in the fields of h that extension typ carries;
// a malformed extension body leaves them unset.
func (h *ClientHello) parseExtension(typ uint16, data []byte) {
	r := reader{b: data, ok: true}
	switch typ {
	case extServerName:
		list := reader{b: r.vec16(), ok: r.ok}
		for list.ok && len(list.b) > 0 {
			kind := list.u8()
			name := list.vec16()
			if list.ok && kind == 0 && h.ServerName == "" {
				h.ServerName = string(name)
			}
		}
	case extALPN:
		list := reader{b: r.vec16(), ok: r.ok}
		for list.ok && len(list.b) > 0 {
			p := list.vec8()
			if list.ok {
				h.ALPN = append(h.ALPN, string(p))
			}
		}
	case extSupportedVersions:
		if v := r.vec8(); r.ok {
			h.SupportedVersions = u16s(v)
		}
	case extSupportedGroups:
		if v := r.vec16(); r.ok {
			h.SupportedGroups = u16s(v)
		}
	case extSignatureAlgorithms:
		if v := r.vec16(); r.ok {
			h.SignatureAlgorithms = u16s(v)
		}
	}
}

// isGREASE reports whether v is a GREASE value (RFC 8701): 0x?a?a with
// equal bytes.
func isGREASE(v uint16) bool { return v&0x0f0f == 0x0a0a && v>>8 == v&0xff }

// JA4 returns h's JA4 fingerprint as the package doc describes it.
func (h *ClientHello) JA4() string {
	var a strings.Builder
	if h.DTLS {
		a.WriteByte('d')
	} else {
		a.WriteByte('t')
	}
	v := h.Version
	for _, sv := range h.SupportedVersions {
		if !isGREASE(sv) && sv > v {
			v = sv
		}
	}
	a.WriteString(versionCode(v))
	if h.ServerName != "" && !isIPLiteral(h.ServerName) {
		a.WriteByte('d')
	} else {
		a.WriteByte('i')
	}
	var ciphers, exts []uint16
	for _, c := range h.CipherSuites {
		if !isGREASE(c) {
			ciphers = append(ciphers, c)
		}
	}
	nExt := 0
	for _, e := range h.Extensions {
		if isGREASE(e.Type) {
			continue
		}
		nExt++
		if e.Type != extServerName && e.Type != extALPN {
			exts = append(exts, e.Type)
		}
	}
	a.WriteString(twoDigits(len(ciphers)))
	a.WriteString(twoDigits(nExt))
	a.WriteString(alpnCode(h.ALPN))
	a.WriteByte('_')

	slices.Sort(ciphers)
	a.WriteString(hash12(hexList(ciphers), len(ciphers) == 0))
	a.WriteByte('_')

	slices.Sort(exts)
	c := hexList(exts)
	if len(h.SignatureAlgorithms) > 0 {
		c += "_" + hexList(h.SignatureAlgorithms)
	}
	a.WriteString(hash12(c, nExt == 0))
	return a.String()
}

func versionCode(v uint16) string {
	switch v {
	case 0x0304:
		return "13"
	case 0x0303:
		return "12"
	case 0x0302:
		return "11"
	case 0x0301:
		return "10"
	case 0x0300:
		return "s3"
	case 0x0002:
		return "s2"
	case 0xfeff:
		return "d1"
	case 0xfefd:
		return "d2"
	case 0xfefc:
		return "d3"
	}
	return "00"
}

func twoDigits(n int) string {
	n = min(n, 99)
	return string([]byte{byte('0' + n/10), byte('0' + n%10)})
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
}

func alpnCode(alpn []string) string {
	if len(alpn) == 0 || alpn[0] == "" {
		return "00"
	}
	p := alpn[0]
	first, last := p[0], p[len(p)-1]
	if isAlnum(first) && isAlnum(last) {
		return string([]byte{first, last})
	}
	x := hex.EncodeToString([]byte(p))
	return string([]byte{x[0], x[len(x)-1]})
}

func isIPLiteral(s string) bool {
	_, err := netip.ParseAddr(strings.Trim(s, "[]"))
	return err == nil
}

func hexList(v []uint16) string {
	b := make([]byte, 0, 5*len(v))
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		const digits = "0123456789abcdef"
		b = append(b, digits[x>>12], digits[x>>8&15], digits[x>>4&15], digits[x&15])
	}
	return string(b)
}

func hash12(s string, empty bool) string {
	if empty {
		return "000000000000"
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:6])
}
