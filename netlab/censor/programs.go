package censor

import (
	"bytes"
	"net/netip"
	"strings"
	"time"
)

func inPrefixes(ps []netip.Prefix, a netip.Addr) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// sniBlock models the blocking of a rendezvous by its broker's domain and
// addresses, as China, Iran and Russia block Snowflake's broker (which is
// why Snowflake rendezvous uses domain fronting and the AMP cache): TCP to
// and from Options.BlockAddrs is dropped, and a TLS ClientHello whose SNI
// is one of Options.BlockNames, or a subdomain of one, is dropped with the
// rest of its flow, both directions. The SNI is read from the TCP segment
// that starts the hello; a hello whose server_name extension lies beyond
// that segment is not matched.
type sniBlock struct {
	d     decoder
	addrs []netip.Prefix
	names []string // lower case, no trailing dot
	flows *flowTable[struct{}]
}

func newSNIBlock(o Options) Program {
	s := &sniBlock{addrs: o.BlockAddrs, flows: newFlowTable[struct{}](o.MaxFlows, o.FlowIdle)}
	for _, n := range o.BlockNames {
		if n = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(n)), "."); n != "" {
			s.names = append(s.names, n)
		}
	}
	return s
}

func (s *sniBlock) Name() string { return "sni-block" }

func (s *sniBlock) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := s.d.decode(pkt)
	if !ok || p.proto != protoTCP {
		return Pass
	}
	if inPrefixes(s.addrs, p.remote(dir)) {
		return Drop
	}
	if len(s.names) == 0 {
		return Pass
	}
	k := p.key(dir)
	if s.flows.get(now, k) != nil {
		return Drop
	}
	if len(p.payload) > 0 && p.payload[0] == contentHandshake {
		if h, ok := tlsClientHello(p.payload); ok && s.blocked(h.ServerName) {
			s.flows.put(now, k)
			return Drop
		}
	}
	return Pass
}

func (s *sniBlock) blocked(sni string) bool {
	sni = strings.TrimSuffix(strings.ToLower(sni), ".")
	if sni == "" {
		return false
	}
	for _, n := range s.names {
		if sni == n || strings.HasSuffix(sni, n) && sni[len(sni)-len(n)-1] == '.' {
			return true
		}
	}
	return false
}

// DefaultBlockJA4 returns dtls-ja4-block's default list: the JA4 of the
// ClientHello a pion/dtls v3 client sends with its default configuration
// (the first hello and the one resent with a HelloVerifyRequest cookie
// have the same JA4), and of the one it sends with the SRTP protection
// profiles pion/webrtc v4 offers (use_srtp added), as the package tests
// derive them from real pion/dtls v3.1.15 hellos.
//
// It also holds the hello of a pion/webrtc v5 peer at its defaults (pion/dtls
// v4, DTLS 1.3-capable), which a censor that blocks pion's hellos would add
// as v5 spreads.
func DefaultBlockJA4() []string {
	return []string{ja4PionDefault, ja4PionWebRTC, ja4PionWebRTCv5}
}

// The JA4s of pion/dtls v3.1.15's hellos; TestDefaultBlockJA4 checks them
// against hellos captured from a real client. ja4PionWebRTCv5 is pion/webrtc
// v5.0.0-rc.2's (pion/dtls v4.0.1); TestDefaultBlockJA4WebRTCv5 checks it
// against two real peer connections.
const (
	ja4PionDefault  = "dd2i080500_df5057009e57_861c66034698"
	ja4PionWebRTC   = "dd2i080600_df5057009e57_817bfcfa1160"
	ja4PionWebRTCv5 = "dd2i110800_88659c0273af_5252cc8b1128"
)

// dtlsJA4Block models Russia's DTLS filtering that began on 2026-03-30
// (net4people/bbs #603): DTLS handshakes whose ClientHello has the default
// pion/dtls fingerprint (by JA3/JA4) are cut, while browsers' hellos pass.
// The hello itself passes; Options.BlockDelay (default 300 ms, long enough
// for the handshake to get under way, as the reports show the flow dying
// after the hello rather than the hello vanishing) after the first listed
// hello, every UDP packet of the flow is dropped, both directions, for as
// long as the flow stays active. The list is Options.BlockJA4, by default
// DefaultBlockJA4.
type dtlsJA4Block struct {
	d     decoder
	list  map[string]bool
	delay time.Duration
	flows *flowTable[ja4Flow]
}

// ja4Flow is what dtlsJA4Block knows of a flow: its hello so far, and once
// judged, when its drop starts (zero: never).
type ja4Flow struct {
	hello   HelloReassembler
	judged  bool
	dropsAt time.Time
}

func newDTLSJA4Block(o Options) Program {
	b := &dtlsJA4Block{list: map[string]bool{}, delay: o.BlockDelay, flows: newFlowTable[ja4Flow](o.MaxFlows, o.FlowIdle)}
	for _, j := range o.BlockJA4 {
		b.list[strings.TrimSpace(j)] = true
	}
	return b
}

func (b *dtlsJA4Block) Name() string { return "dtls-ja4-block" }

func (b *dtlsJA4Block) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := b.d.decode(pkt)
	if !ok || p.proto != protoUDP {
		return Pass
	}
	k := p.key(dir)
	f := b.flows.get(now, k)
	if f != nil && f.judged {
		if !f.dropsAt.IsZero() && !now.Before(f.dropsAt) {
			return Drop
		}
		return Pass
	}
	if !maybeClientHello(p.payload) {
		return Pass
	}
	if f == nil {
		f = b.flows.put(now, k)
	}
	h, ok := f.hello.Add(p.payload)
	f.judged = ok || f.hello.Failed()
	if ok && b.list[h.JA4()] {
		f.dropsAt = now.Add(b.delay)
	}
	return Pass
}

// groups2022 is the supported_groups extension of pion/dtls's hellos in
// 2021-2022: type 0x000a, length 8, list length 6, X25519, P-256, P-384.
var groups2022 = [...]byte{0x00, 0x0a, 0x00, 0x08, 0x00, 0x06, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18}

// groups2022At is where pion/dtls's ClientHello puts groups2022 in its
// extensions block (after the 2-byte block length): after its
// signature_algorithms extension (4 + 22 bytes, ten schemes) and its
// renegotiation_info (5 bytes).
const groups2022At = 2 + 26 + 5

// dtlsBytes2022 models Russia's byte-pattern DTLS filter of December 2021
// to 2022 (Snowflake issue 40014; pion/dtls #409 and #410 for the
// ServerHello, #474 for the ClientHello): the TSPU looked for the DTLS 1.2
// record magic 16 fe fd and the curve list 00 1d 00 17 00 18 at fixed
// offsets of the packet. This program matches, in the first handshake
// message of a datagram starting with an epoch-0 16 fe fd record:
//
//   - a ClientHello whose extensions block has groups2022 (the whole
//     supported_groups extension 00 0a 00 08 00 06 00 1d 00 17 00 18) at
//     offset 33, where pion's hello puts it; anchoring at the extensions
//     rather than at the packet keeps the rule matching pion's hello when
//     its session id, cookie or cipher list change length, and keeps it
//     from matching a hello that sends the same groups elsewhere (Firefox's
//     replayed by covert-dtls sends them at offset 11);
//   - a ServerHello whose extensions hold groups2022 anywhere (pion before
//     v2.0.12 sent supported_groups in its ServerHello; browsers never do).
//
// It drops that packet and the rest of its flow, both directions, at once.
// pion/dtls v3's default hello still matches.
type dtlsBytes2022 struct {
	d     decoder
	flows *flowTable[struct{}]
}

func newDTLSBytes2022(o Options) Program {
	return &dtlsBytes2022{flows: newFlowTable[struct{}](o.MaxFlows, o.FlowIdle)}
}

func (b *dtlsBytes2022) Name() string { return "dtls-bytes-2022" }

func (b *dtlsBytes2022) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := b.d.decode(pkt)
	if !ok || p.proto != protoUDP {
		return Pass
	}
	k := p.key(dir)
	if b.flows.get(now, k) != nil {
		return Drop
	}
	if matches2022(p.payload) {
		b.flows.put(now, k)
		return Drop
	}
	return Pass
}

// matches2022 applies dtlsBytes2022's rule to a UDP payload without
// allocating.
func matches2022(pl []byte) bool {
	if len(pl) < dtlsRecordHeaderLen+dtlsHandshakeHeaderLen || pl[0] != contentHandshake || pl[1] != 0xfe ||
		pl[2] != 0xfd || pl[3] != 0 || pl[4] != 0 {
		return false
	}
	r, _, ok := nextRecord(pl)
	if !ok {
		return false
	}
	m := r.body
	if len(m) < dtlsHandshakeHeaderLen {
		return false
	}
	typ := m[0]
	if typ != handshakeClientHello && typ != handshakeServerHello {
		return false
	}
	br := reader{b: m[dtlsHandshakeHeaderLen:], ok: true}
	br.bytes(2 + 32) // version, random
	br.vec8()        // session id
	if typ == handshakeClientHello {
		br.vec8()  // cookie
		br.vec16() // cipher suites
		br.vec8()  // compression methods
	} else {
		br.bytes(2 + 1) // cipher suite, compression method
	}
	ext := br.b // the extensions block, length included
	if !br.ok {
		return false
	}
	if typ == handshakeServerHello {
		return bytes.Contains(ext, groups2022[:])
	}
	return len(ext) >= groups2022At+len(groups2022) &&
		bytes.Equal(ext[groups2022At:groups2022At+len(groups2022)], groups2022[:])
}

// dtlsAllowlist models an allowlisting censor, the step beyond blocking
// listed fingerprints: only DTLS handshakes that look like a mainstream
// browser's are let through. A DTLS ClientHello whose JA4 is in
// Options.AllowJA4 opens its flow; any other DTLS hello closes it, and a
// DTLS record on a flow no allowed hello opened is dropped. UDP that is not
// DTLS (STUN, TURN, RTP) passes. The lab fills the list with the JA4s of
// the browsers it runs (the tests' JA4OfDatagram on captured hellos).
type dtlsAllowlist struct {
	d     decoder
	allow map[string]bool
	flows *flowTable[allowFlow]
}

// allowFlow is what dtlsAllowlist knows of a flow: its hello so far, and
// once judged, whether it was allowed.
type allowFlow struct {
	hello   HelloReassembler
	judged  bool
	allowed bool
}

func newDTLSAllowlist(o Options) Program {
	a := &dtlsAllowlist{allow: map[string]bool{}, flows: newFlowTable[allowFlow](o.MaxFlows, o.FlowIdle)}
	for _, j := range o.AllowJA4 {
		a.allow[strings.TrimSpace(j)] = true
	}
	return a
}

func (a *dtlsAllowlist) Name() string { return "dtls-allowlist" }

func (a *dtlsAllowlist) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := a.d.decode(pkt)
	if !ok || p.proto != protoUDP || !isDTLS(p.payload) {
		return Pass
	}
	k := p.key(dir)
	f := a.flows.get(now, k)
	if f != nil && f.judged {
		if f.allowed {
			return Pass
		}
		return Drop
	}
	if !maybeClientHello(p.payload) {
		return Drop
	}
	if f == nil {
		f = a.flows.put(now, k)
	}
	// The fragments of a hello pass until the last one, which decides; a
	// hello that cannot be put together is not allowed.
	h, ok := f.hello.Add(p.payload)
	if !ok && !f.hello.Failed() {
		return Pass
	}
	f.judged, f.allowed = true, ok && a.allow[h.JA4()]
	if !f.allowed {
		return Drop
	}
	return Pass
}

// udpBlock models networks that carry no UDP at all (many corporate and
// some mobile networks; censors that cut UDP during shutdowns): every UDP
// packet, fragments included, is dropped, and TCP passes.
type udpBlock struct{}

func newUDPBlock(Options) Program { return udpBlock{} }

func (udpBlock) Name() string { return "udp-block" }

func (udpBlock) Judge(_ time.Time, _ Direction, pkt []byte) Verdict {
	proto, ok := ipProto(pkt)
	if !ok {
		return Pass
	}
	if proto == 44 && len(pkt) >= 48 { // IPv6 fragment header: its next header
		proto = pkt[40]
	}
	if proto == protoUDP {
		return Drop
	}
	return Pass
}

// STUN (RFC 8489): the magic cookie at offset 4 of the UDP payload.
const stunMagic = 0x2112a442

// stunBlock models the blocking of STUN, which WebRTC needs for NAT
// discovery and ICE connectivity checks (censors have blocked the public
// STUN servers Snowflake clients are configured with): a UDP payload that
// is a STUN message (first two bits zero, magic cookie 0x2112a442 at offset
// 4, length a multiple of 4 that fits) of method Binding and class request,
// success response or error response is dropped; binding indications
// (keepalives) pass. With Options.STUNAddrs set, only messages to and from
// those prefixes are dropped.
type stunBlock struct {
	d     decoder
	addrs []netip.Prefix
}

func newSTUNBlock(o Options) Program { return &stunBlock{addrs: o.STUNAddrs} }

func (s *stunBlock) Name() string { return "stun-block" }

func (s *stunBlock) Judge(_ time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := s.d.decode(pkt)
	if !ok || p.proto != protoUDP || !isSTUNBinding(p.payload) {
		return Pass
	}
	if len(s.addrs) > 0 && !inPrefixes(s.addrs, p.remote(dir)) {
		return Pass
	}
	return Drop
}

func isSTUNBinding(b []byte) bool {
	if len(b) < 20 || b[0]&0xc0 != 0 {
		return false
	}
	if uint32(b[4])<<24|uint32(b[5])<<16|uint32(b[6])<<8|uint32(b[7]) != stunMagic {
		return false
	}
	n := int(b[2])<<8 | int(b[3])
	if n%4 != 0 || 20+n > len(b) {
		return false
	}
	typ := uint16(b[0])<<8 | uint16(b[1])
	class := typ & 0x0110
	return typ&^0x0110 == 0x0001 && class != 0x0010
}

// udpThrottle models throttling rather than blocking, as censors police
// traffic they cannot or will not block outright (Russia's TSPU throttled
// Twitter in March 2021; Iran throttles international traffic): each
// direction of each UDP flow is policed by a token bucket of
// Options.ThrottleRate bits per second (default 256 kbit/s) and
// Options.ThrottleBurst bytes (default 16 KiB), counting IP packet length;
// a packet the bucket cannot pay for is dropped.
type udpThrottle struct {
	d     decoder
	rate  float64 // bytes per second
	burst float64
	flows *flowTable[[2]bucket] // by Direction
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newUDPThrottle(o Options) Program {
	return &udpThrottle{
		rate:  float64(o.ThrottleRate) / 8,
		burst: float64(o.ThrottleBurst),
		flows: newFlowTable[[2]bucket](o.MaxFlows, o.FlowIdle),
	}
}

func (u *udpThrottle) Name() string { return "udp-throttle" }

func (u *udpThrottle) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := u.d.decode(pkt)
	if !ok || p.proto != protoUDP {
		return Pass
	}
	k := p.key(dir)
	st := u.flows.get(now, k)
	if st == nil {
		st = u.flows.put(now, k)
		st[Outbound] = bucket{tokens: u.burst, last: now}
		st[Inbound] = st[Outbound]
	}
	b := &st[dir&1]
	if dt := now.Sub(b.last); dt > 0 {
		b.tokens = min(u.burst, b.tokens+dt.Seconds()*u.rate)
		b.last = now
	}
	if size := float64(p.ipLen); b.tokens >= size {
		b.tokens -= size
		return Pass
	}
	return Drop
}
