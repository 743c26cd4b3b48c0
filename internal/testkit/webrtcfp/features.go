package webrtcfp

import (
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Features maps a feature name (see Names) to its value as a string; a
// missing feature is "-".
type Features map[string]string

// The features, in table order. "client hello" is the hello the DTLS client
// sent, "server hello" the DTLS server's; STUN rows are per ICE role.
var Names = []string{
	"dtls client (offerer or answerer)",
	"client hello: record version",
	"client hello: handshake version",
	"client hello: session id length",
	"client hello: cipher suites",
	"client hello: compression methods",
	"client hello: extensions (order)",
	"client hello: extensions (set)",
	"client hello: supported groups",
	"client hello: signature algorithms",
	"client hello: use_srtp profiles",
	"client hello: extended master secret",
	"client hello: supported versions",
	"client hello: key share groups",
	"client hello: ALPN",
	"client hello: ec point formats",
	"cookie exchange (HelloVerifyRequest)",
	"server hello: record version",
	"server hello: handshake version",
	"server hello: cipher suite",
	"server hello: extensions (order)",
	"server hello: use_srtp profile",
	"server hello: extended master secret",
	"server hello: supported version",
	"stun controlling: binding request attributes",
	"stun controlled: binding request attributes",
	"stun: SOFTWARE attribute",
	"stun: GOOG-NETWORK-INFO network cost",
}

// handshake message types read here.
const (
	hsClientHello        = 1
	hsServerHello        = 2
	hsHelloVerifyRequest = 3
)

// message is one reassembled epoch-0 handshake message.
type message struct {
	from          Side
	typ           byte
	recordVersion uint16
	body          []byte
}

// Extract reads the datagrams of one connection and returns its features.
func Extract(dgs []Datagram) Features {
	f := Features{}
	for _, n := range Names {
		f[n] = "-"
	}
	msgs := handshakes(dgs)
	var clientHellos []message
	for _, m := range msgs {
		switch m.typ {
		case hsClientHello:
			clientHellos = append(clientHellos, m)
		case hsHelloVerifyRequest:
			f["cookie exchange (HelloVerifyRequest)"] = "yes"
		case hsServerHello:
			if f["server hello: record version"] == "-" {
				serverHello(f, m)
			}
		}
	}
	if f["cookie exchange (HelloVerifyRequest)"] == "-" {
		f["cookie exchange (HelloVerifyRequest)"] = "no"
	}
	if len(clientHellos) > 0 {
		f["dtls client (offerer or answerer)"] = clientHellos[0].from.String()
		clientHello(f, clientHellos[0])
	}
	stunFeatures(f, dgs)
	return f
}

// handshakes reassembles the epoch-0 handshake messages of dgs, in order
// of completion, each once (retransmissions dropped).
func handshakes(dgs []Datagram) []message {
	type key struct {
		from Side
		seq  uint16
	}
	type partial struct {
		typ     byte
		version uint16
		buf     []byte
		have    []bool
		done    bool
	}
	parts := map[key]*partial{}
	var out []message
	for _, d := range dgs {
		b := d.Data
		if len(b) == 0 || b[0] < 20 || b[0] > 63 {
			continue // not DTLS
		}
		for len(b) >= 13 {
			ct, version, epoch := b[0], binary.BigEndian.Uint16(b[1:]), binary.BigEndian.Uint16(b[3:])
			n := int(binary.BigEndian.Uint16(b[11:]))
			if ct < 20 || ct > 26 || len(b) < 13+n {
				break // DTLS 1.3 unified header or garbage: nothing more in clear
			}
			rec := b[13 : 13+n]
			b = b[13+n:]
			if ct != 22 || epoch != 0 {
				continue
			}
			for len(rec) >= 12 {
				typ := rec[0]
				total := int(uint32(rec[1])<<16 | uint32(rec[2])<<8 | uint32(rec[3]))
				seq := binary.BigEndian.Uint16(rec[4:])
				off := int(uint32(rec[6])<<16 | uint32(rec[7])<<8 | uint32(rec[8]))
				fl := int(uint32(rec[9])<<16 | uint32(rec[10])<<8 | uint32(rec[11]))
				if len(rec) < 12+fl || off+fl > total || total > 1<<16 {
					break
				}
				frag := rec[12 : 12+fl]
				rec = rec[12+fl:]
				k := key{d.From, seq}
				p := parts[k]
				if p == nil || p.typ != typ || len(p.buf) != total {
					if p != nil && p.done && p.typ == typ {
						continue
					}
					p = &partial{typ: typ, version: version, buf: make([]byte, total), have: make([]bool, total)}
					parts[k] = p
				}
				if p.done {
					continue
				}
				copy(p.buf[off:], frag)
				for i := off; i < off+fl; i++ {
					p.have[i] = true
				}
				if !slices.Contains(p.have, false) {
					p.done = true
					out = append(out, message{from: d.From, typ: typ, recordVersion: p.version, body: p.buf})
				}
			}
		}
	}
	return out
}

// reader reads big-endian fields, remembering failure.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) n(k int) []byte {
	if r.bad || len(r.b) < k {
		r.bad = true
		return nil
	}
	v := r.b[:k]
	r.b = r.b[k:]
	return v
}

func (r *reader) u8() int  { v := r.n(1); return int(at(v, 0)) }
func (r *reader) u16() int { v := r.n(2); return int(at(v, 0))<<8 | int(at(v, 1)) }
func (r *reader) vec8() []byte {
	return r.n(r.u8())
}
func (r *reader) vec16() []byte { return r.n(r.u16()) }

func at(b []byte, i int) byte {
	if i < len(b) {
		return b[i]
	}
	return 0
}

// u16s formats a list of 16-bit values in hex.
func u16s(b []byte) string {
	var s []string
	for i := 0; i+1 < len(b); i += 2 {
		s = append(s, fmt.Sprintf("%04x", binary.BigEndian.Uint16(b[i:])))
	}
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ",")
}

func version(v uint16) string {
	switch v {
	case 0xfeff:
		return "DTLS 1.0"
	case 0xfefd:
		return "DTLS 1.2"
	case 0xfefc:
		return "DTLS 1.3"
	}
	return fmt.Sprintf("%04x", v)
}

// extension is one hello extension.
type extension struct {
	typ  int
	data []byte
}

func extensions(r *reader) []extension {
	if len(r.b) == 0 {
		return nil
	}
	er := &reader{b: r.vec16()}
	var out []extension
	for len(er.b) > 0 && !er.bad {
		t := er.u16()
		d := er.vec16()
		if er.bad {
			break
		}
		out = append(out, extension{t, d})
	}
	return out
}

func extName(t int) string {
	if n, ok := extNames[t]; ok {
		return n
	}
	return fmt.Sprintf("%04x", t)
}

var extNames = map[int]string{
	0x0000: "server_name", 0x000a: "supported_groups", 0x000b: "ec_point_formats",
	0x000d: "signature_algorithms", 0x000e: "use_srtp", 0x0010: "alpn",
	0x0017: "extended_master_secret", 0x0023: "session_ticket", 0x002b: "supported_versions",
	0x002d: "psk_key_exchange_modes", 0x0033: "key_share", 0x0036: "connection_id",
	0xff01: "renegotiation_info", 0x001c: "record_size_limit",
}

func extList(es []extension, sorted bool) string {
	var s []string
	for _, e := range es {
		s = append(s, extName(e.typ))
	}
	if sorted {
		sort.Strings(s)
	}
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ",")
}

func clientHello(f Features, m message) {
	r := &reader{b: m.body}
	f["client hello: record version"] = version(m.recordVersion)
	f["client hello: handshake version"] = version(uint16(r.u16()))
	r.n(32) // random
	f["client hello: session id length"] = fmt.Sprint(len(r.vec8()))
	r.vec8() // cookie
	f["client hello: cipher suites"] = u16s(r.vec16())
	f["client hello: compression methods"] = fmt.Sprintf("%x", r.vec8())
	es := extensions(r)
	if r.bad {
		f["client hello: cipher suites"] = "unparsable"
		return
	}
	f["client hello: extensions (order)"] = extList(es, false)
	f["client hello: extensions (set)"] = extList(es, true)
	f["client hello: extended master secret"] = "no"
	for _, e := range es {
		er := &reader{b: e.data}
		switch e.typ {
		case 0x000a:
			f["client hello: supported groups"] = u16s(er.vec16())
		case 0x000d:
			f["client hello: signature algorithms"] = u16s(er.vec16())
		case 0x000e:
			f["client hello: use_srtp profiles"] = u16s(er.vec16()) + fmt.Sprintf(" mki=%x", er.vec8())
		case 0x0017:
			f["client hello: extended master secret"] = "yes"
		case 0x002b:
			f["client hello: supported versions"] = u16s(er.vec8())
		case 0x0033:
			kr := &reader{b: er.vec16()}
			var groups []string
			for len(kr.b) > 0 && !kr.bad {
				groups = append(groups, fmt.Sprintf("%04x", kr.u16()))
				kr.vec16()
			}
			f["client hello: key share groups"] = strings.Join(groups, ",")
		case 0x0010:
			lr := &reader{b: er.vec16()}
			var names []string
			for len(lr.b) > 0 && !lr.bad {
				names = append(names, fmt.Sprintf("%q", lr.vec8()))
			}
			f["client hello: ALPN"] = strings.Join(names, ",")
		case 0x000b:
			f["client hello: ec point formats"] = fmt.Sprintf("%x", er.vec8())
		}
	}
}

func serverHello(f Features, m message) {
	r := &reader{b: m.body}
	f["server hello: record version"] = version(m.recordVersion)
	f["server hello: handshake version"] = version(uint16(r.u16()))
	r.n(32)
	r.vec8() // session id
	f["server hello: cipher suite"] = fmt.Sprintf("%04x", r.u16())
	r.u8() // compression
	es := extensions(r)
	if r.bad {
		f["server hello: cipher suite"] = "unparsable"
		return
	}
	f["server hello: extensions (order)"] = extList(es, false)
	f["server hello: extended master secret"] = "no"
	for _, e := range es {
		er := &reader{b: e.data}
		switch e.typ {
		case 0x000e:
			f["server hello: use_srtp profile"] = u16s(er.vec16())
		case 0x0017:
			f["server hello: extended master secret"] = "yes"
		case 0x002b:
			f["server hello: supported version"] = version(uint16(er.u16()))
		}
	}
}

var stunAttrNames = map[int]string{
	0x0006: "USERNAME", 0x0008: "MESSAGE-INTEGRITY", 0x001c: "MESSAGE-INTEGRITY-SHA256",
	0x0024: "PRIORITY", 0x0025: "USE-CANDIDATE", 0x8022: "SOFTWARE", 0x8028: "FINGERPRINT",
	0x8029: "ICE-CONTROLLED", 0x802a: "ICE-CONTROLLING", 0xc057: "GOOG-NETWORK-INFO",
	0xc059: "GOOG-MISC-INFO", 0xc05a: "GOOG-OBSOLETE-1", 0xc060: "GOOG-DELTA",
}

// stunFeatures records, per ICE role, the distinct attribute sequences of
// the binding requests sent.
func stunFeatures(f Features, dgs []Datagram) {
	seqs := map[string]map[string]bool{}
	software, netInfo := "no", map[string]bool{}
	for _, d := range dgs {
		b := d.Data
		if len(b) < 20 || b[0] > 3 || binary.BigEndian.Uint16(b) != 0x0001 || binary.BigEndian.Uint32(b[4:]) != 0x2112a442 {
			continue
		}
		b = b[20:]
		var attrs []string
		role := ""
		for len(b) >= 4 {
			t, n := int(binary.BigEndian.Uint16(b)), int(binary.BigEndian.Uint16(b[2:]))
			if len(b) < 4+n {
				break
			}
			name, ok := stunAttrNames[t]
			if !ok {
				name = fmt.Sprintf("%04x", t)
			}
			switch t {
			case 0x802a:
				role = "stun controlling: binding request attributes"
			case 0x8029:
				role = "stun controlled: binding request attributes"
			case 0x8022:
				software = "yes"
			case 0xc057:
				if n == 4 {
					// The network id numbers the sender's interfaces; the cost
					// tells wired (0) from Wi-Fi (10) or cellular (900).
					netInfo[fmt.Sprint(binary.BigEndian.Uint16(b[6:]))] = true
				}
			}
			attrs = append(attrs, name)
			b = b[min(len(b), 4+(n+3)&^3):]
		}
		if role == "" {
			continue
		}
		if seqs[role] == nil {
			seqs[role] = map[string]bool{}
		}
		seqs[role][strings.Join(attrs, ",")] = true
	}
	for role, set := range seqs {
		var s []string
		for k := range set {
			s = append(s, k)
		}
		sort.Strings(s)
		f[role] = strings.Join(s, " ; ")
	}
	f["stun: SOFTWARE attribute"] = software
	f["stun: GOOG-NETWORK-INFO network cost"] = "-"
	if len(netInfo) > 0 {
		f["stun: GOOG-NETWORK-INFO network cost"] = strings.Join(slices.Sorted(maps.Keys(netInfo)), " ; ")
	}
}
