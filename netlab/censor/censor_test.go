package censor

import (
	"crypto/tls"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/gopacket"
	"github.com/google/gopacket/layers"
)

var (
	client4 = netip.MustParseAddrPort("10.0.0.2:50000")
	server4 = netip.MustParseAddrPort("198.51.100.7:443")
	client6 = netip.MustParseAddrPort("[fd00::2]:50000")
	server6 = netip.MustParseAddrPort("[2001:db8::7]:443")
	t0      = time.Date(2026, 3, 30, 12, 0, 0, 0, time.UTC)
)

// ipPacket serializes an IPv4 or IPv6 packet (by src's family) from src to
// dst carrying l4 and payload.
func ipPacket(t testing.TB, src, dst netip.AddrPort, l4 gopacket.SerializableLayer, proto layers.IPProtocol, payload []byte) []byte {
	t.Helper()
	var ip interface {
		gopacket.SerializableLayer
		gopacket.NetworkLayer
	}
	if src.Addr().Is4() {
		ip = &layers.IPv4{Version: 4, IHL: 5, TTL: 64, Protocol: proto, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	} else {
		ip = &layers.IPv6{Version: 6, HopLimit: 64, NextHeader: proto, SrcIP: src.Addr().AsSlice(), DstIP: dst.Addr().AsSlice()}
	}
	switch l := l4.(type) {
	case *layers.UDP:
		if err := l.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
	case *layers.TCP:
		if err := l.SetNetworkLayerForChecksum(ip); err != nil {
			t.Fatal(err)
		}
	}
	buf := gopacket.NewSerializeBuffer()
	opts := gopacket.SerializeOptions{FixLengths: true, ComputeChecksums: true}
	if err := gopacket.SerializeLayers(buf, opts, ip, l4, gopacket.Payload(payload)); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func udpPacket(t testing.TB, src, dst netip.AddrPort, payload []byte) []byte {
	return ipPacket(t, src, dst, &layers.UDP{SrcPort: layers.UDPPort(src.Port()), DstPort: layers.UDPPort(dst.Port())}, layers.IPProtocolUDP, payload)
}

func tcpPacket(t testing.TB, src, dst netip.AddrPort, payload []byte) []byte {
	tcp := &layers.TCP{SrcPort: layers.TCPPort(src.Port()), DstPort: layers.TCPPort(dst.Port()), Seq: 1, ACK: true, PSH: len(payload) > 0, Window: 65535}
	return ipPacket(t, src, dst, tcp, layers.IPProtocolTCP, payload)
}

// flow sends packets of one client/server pair in either direction.
type flow struct {
	t              testing.TB
	client, server netip.AddrPort
}

func (f flow) udp(dir Direction, payload []byte) []byte {
	if dir == Outbound {
		return udpPacket(f.t, f.client, f.server, payload)
	}
	return udpPacket(f.t, f.server, f.client, payload)
}

func (f flow) tcp(dir Direction, payload []byte) []byte {
	if dir == Outbound {
		return tcpPacket(f.t, f.client, f.server, payload)
	}
	return tcpPacket(f.t, f.server, f.client, payload)
}

// dtlsRecord returns a DTLS 1.2 record of type typ in epoch with an n-byte
// body.
func dtlsRec(typ byte, epoch uint16, n int) []byte {
	b := []byte{typ, 0xfe, 0xfd, byte(epoch >> 8), byte(epoch), 0, 0, 0, 0, 0, 1, byte(n >> 8), byte(n)}
	return append(b, make([]byte, n)...)
}

// tlsHello returns the first flight of a crypto/tls client for name.
func tlsHello(t testing.TB, name string) []byte {
	t.Helper()
	c, s := net.Pipe()
	defer s.Close()
	go func() {
		_ = tls.Client(c, &tls.Config{ServerName: name}).Handshake()
		c.Close()
	}()
	buf := make([]byte, 4096)
	n, err := s.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return buf[:n]
}

func stunMessage(typ uint16) []byte {
	b := []byte{byte(typ >> 8), byte(typ), 0, 0, 0x21, 0x12, 0xa4, 0x42}
	return append(b, make([]byte, 12)...)
}

func mustParse(t testing.TB, spec string, o Options) Program {
	t.Helper()
	p, err := Parse(spec, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// step is one packet of a table test and the verdict expected.
type step struct {
	at   time.Duration
	dir  Direction
	pkt  []byte
	want Verdict
}

func run(t *testing.T, p Program, steps []step) {
	t.Helper()
	for i, s := range steps {
		if got := p.Judge(t0.Add(s.at), s.dir, s.pkt); got != s.want {
			t.Errorf("%s: packet %d (dir %d, %d bytes): verdict %d, want %d", p.Name(), i, s.dir, len(s.pkt), got, s.want)
		}
	}
}

func TestParse(t *testing.T) {
	if got, want := len(Names()), len(programTable); got != want {
		t.Fatalf("Names: %d names, want %d", got, want)
	}
	all := strings.Join(Names(), ",")
	p, err := Parse(" "+strings.ReplaceAll(all, ",", " , ")+" ", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name() != all {
		t.Errorf("Name %q, want %q", p.Name(), all)
	}
	_, err = Parse("udp-block,gfw", Options{})
	if !errors.Is(err, ErrUnknownProgram) || !strings.Contains(err.Error(), "gfw") || !strings.Contains(err.Error(), "tunnel-shape") {
		t.Errorf("unknown program: %v", err)
	}
	if _, err := Parse("udp-block,udp-block", Options{}); err == nil {
		t.Error("a program named twice was accepted")
	}
	if _, err := Parse("udp-block", Options{ThrottleRate: -1}); !errors.Is(err, ErrOptions) {
		t.Errorf("negative rate: %v", err)
	}
	for _, spec := range []string{"", "none"} {
		p := mustParse(t, spec, Options{})
		if v := p.Judge(t0, Outbound, udpPacket(t, client4, server4, []byte("x"))); v != Pass {
			t.Errorf("spec %q dropped a packet", spec)
		}
	}
}

func TestChainEveryProgramSees(t *testing.T) {
	f := flow{t, client4, server4}
	hello, _ := captureHellos(t)
	// dtls-bytes-2022 drops the hello; cut-after-handshake must still see
	// it and start tracking the flow.
	p := mustParse(t, "dtls-bytes-2022,cut-after-handshake", Options{CutAfterBytes: 100})
	run(t, p, []step{{0, Outbound, f.udp(Outbound, hello), Drop}})
	c := p.(*chain).ps[1].(*cutAfterHandshake)
	if c.flows.len() != 1 {
		t.Errorf("cut-after-handshake tracks %d flows, want 1", c.flows.len())
	}
}

func TestSNIBlock(t *testing.T) {
	o := Options{BlockAddrs: []netip.Prefix{netip.MustParsePrefix("203.0.113.0/24")}, BlockNames: []string{"Broker.Example.NET."}}
	f := flow{t, client4, server4}
	g := flow{t, client4, netip.MustParseAddrPort("198.51.100.8:443")}
	blockedIP := flow{t, client4, netip.MustParseAddrPort("203.0.113.9:443")}
	blocked6 := flow{t, client6, server6}
	o.BlockAddrs = append(o.BlockAddrs, netip.MustParsePrefix("2001:db8::/64"))
	run(t, mustParse(t, "sni-block", o), []step{
		{0, Outbound, blockedIP.tcp(Outbound, nil), Drop},
		{0, Inbound, blockedIP.tcp(Inbound, nil), Drop},
		{0, Outbound, blockedIP.udp(Outbound, []byte("dns")), Pass},
		{0, Outbound, blocked6.tcp(Outbound, nil), Drop},
		{0, Outbound, f.tcp(Outbound, nil), Pass},
		{0, Outbound, f.tcp(Outbound, tlsHello(t, "www.broker.example.net")), Drop},
		{0, Inbound, f.tcp(Inbound, []byte("late server bytes")), Drop},
		{0, Outbound, f.tcp(Outbound, nil), Drop},
		{0, Outbound, g.tcp(Outbound, tlsHello(t, "notbroker.example.net")), Pass},
		{0, Inbound, g.tcp(Inbound, []byte("server bytes")), Pass},
	})
}

func TestDTLSJA4Block(t *testing.T) {
	pion, pionCookie := captureHellos(t)
	webrtc, _ := captureHellos(t, webrtcOpts(t)...)
	mimic, _ := captureHellos(t, mimicOpts(t)...)
	for _, fam := range []struct {
		name           string
		client, server netip.AddrPort
	}{{"ipv4", client4, server4}, {"ipv6", client6, server6}} {
		t.Run(fam.name, func(t *testing.T) {
			f := flow{t, fam.client, fam.server}
			g := flow{t, fam.client, netip.AddrPortFrom(fam.server.Addr(), 444)}
			h := flow{t, fam.client, netip.AddrPortFrom(fam.server.Addr(), 445)}
			ms := time.Millisecond
			run(t, mustParse(t, "dtls-ja4-block", Options{}), []step{
				// pion's hello comes in from a proxy outside: it passes,
				// then the flow dies after the delay, both ways.
				{0, Inbound, f.udp(Inbound, pion), Pass},
				{10 * ms, Outbound, f.udp(Outbound, helloVerifyRequest([]byte("c"))), Pass},
				{20 * ms, Inbound, f.udp(Inbound, pionCookie), Pass},
				{299 * ms, Outbound, f.udp(Outbound, dtlsRec(contentHandshake, 0, 600)), Pass},
				{300 * ms, Outbound, f.udp(Outbound, dtlsRec(contentApplicationData, 1, 100)), Drop},
				{400 * ms, Inbound, f.udp(Inbound, dtlsRec(contentApplicationData, 1, 100)), Drop},
				{0, Outbound, g.udp(Outbound, webrtc), Pass},
				{time.Second, Outbound, g.udp(Outbound, stunMessage(0x0001)), Drop},
				// covert-dtls's mimic is not on the list.
				{0, Inbound, h.udp(Inbound, mimic), Pass},
				{time.Second, Inbound, h.udp(Inbound, dtlsRec(contentApplicationData, 1, 100)), Pass},
			})
		})
	}
}

func TestDTLSBytes2022(t *testing.T) {
	pion, pionCookie := captureHellos(t)
	webrtc, _ := captureHellos(t, webrtcOpts(t)...)
	mimic, _ := captureHellos(t, mimicOpts(t)...)
	random, _ := captureHellos(t, randomizeOpts(t)...)
	p := mustParse(t, "dtls-bytes-2022", Options{})
	f, g, h := flow{t, client4, server4}, flow{t, client6, server6}, flow{t, client4, netip.MustParseAddrPort("198.51.100.9:9")}
	run(t, p, []step{
		{0, Outbound, f.udp(Outbound, pion), Drop},
		{0, Inbound, f.udp(Inbound, stunMessage(0x0101)), Drop},
		{0, Inbound, g.udp(Inbound, pionCookie), Drop},
		{0, Outbound, h.udp(Outbound, webrtc), Drop},
	})
	for name, hello := range map[string][]byte{"mimic": mimic, "randomize": random} {
		k := flow{t, client4, netip.MustParseAddrPort("192.0.2.1:1")}
		if !matches2022(pion) || matches2022(hello) && name == "mimic" {
			t.Errorf("%s: rule matches pion %v, %s %v", name, matches2022(pion), name, matches2022(hello))
		}
		if name == "mimic" {
			run(t, mustParse(t, "dtls-bytes-2022", Options{}), []step{{0, Outbound, k.udp(Outbound, hello), Pass}})
		}
	}
}

func TestDTLSAllowlist(t *testing.T) {
	pion, _ := captureHellos(t)
	mimic, _ := captureHellos(t, mimicOpts(t)...)
	ja4, ok := JA4OfDatagram(mimic)
	if !ok {
		t.Fatal("no JA4 for the mimic hello")
	}
	f := flow{t, client4, server4}
	g := flow{t, client4, netip.MustParseAddrPort("198.51.100.8:443")}
	u := flow{t, client4, netip.MustParseAddrPort("198.51.100.10:443")}
	run(t, mustParse(t, "dtls-allowlist", Options{AllowJA4: []string{ja4}}), []step{
		{0, Outbound, f.udp(Outbound, stunMessage(0x0001)), Pass},
		{0, Outbound, f.udp(Outbound, mimic), Pass},
		{0, Inbound, f.udp(Inbound, dtlsRec(contentHandshake, 0, 500)), Pass},
		{0, Outbound, f.udp(Outbound, dtlsRec(contentApplicationData, 1, 500)), Pass},
		{0, Inbound, g.udp(Inbound, pion), Drop},
		{0, Outbound, g.udp(Outbound, dtlsRec(contentHandshake, 0, 500)), Drop},
		{0, Outbound, g.udp(Outbound, stunMessage(0x0001)), Pass},
		{0, Outbound, u.udp(Outbound, dtlsRec(contentApplicationData, 1, 50)), Drop},
		{0, Outbound, u.udp(Outbound, []byte{0x80, 0x60, 0, 1}), Pass}, // RTP
	})
}

func TestTunnelShape(t *testing.T) {
	hello, _ := captureHellos(t)
	app := func(n int) []byte { return dtlsRec(contentApplicationData, 1, n) }
	f := flow{t, client4, server4}
	run(t, mustParse(t, "tunnel-shape", Options{}), []step{
		{0, Outbound, f.udp(Outbound, hello), Pass},
		{0, Inbound, f.udp(Inbound, dtlsRec(contentHandshake, 0, 900)), Pass},
		{0, Outbound, f.udp(Outbound, app(100)), Pass}, // SCTP INIT
		{0, Inbound, f.udp(Inbound, app(120)), Pass},   // INIT ACK
		{0, Outbound, f.udp(Outbound, app(600)), Pass}, // TLS ClientHello
		{0, Inbound, f.udp(Inbound, app(60)), Pass},    // SACK
		{0, Inbound, f.udp(Inbound, app(1150)), Drop},  // ServerHello flight
		{0, Outbound, f.udp(Outbound, app(300)), Drop},
		{0, Outbound, f.udp(Outbound, app(150)), Pass},
		{0, Inbound, f.udp(Inbound, app(1000)), Drop},
	})
	// The same client padding its first flight to a full record.
	g := flow{t, client4, netip.MustParseAddrPort("198.51.100.8:443")}
	run(t, mustParse(t, "tunnel-shape", Options{}), []step{
		{0, Inbound, g.udp(Inbound, hello), Pass}, // the DTLS client is outside
		{0, Inbound, g.udp(Inbound, app(1150)), Pass},
		{0, Inbound, g.udp(Inbound, app(400)), Pass},
		{0, Outbound, g.udp(Outbound, app(60)), Pass},
		{0, Outbound, g.udp(Outbound, app(1150)), Pass},
		{0, Outbound, g.udp(Outbound, app(1150)), Pass},
	})
	// Without a hello seen, nothing is tracked.
	h := flow{t, client4, netip.MustParseAddrPort("198.51.100.9:443")}
	run(t, mustParse(t, "tunnel-shape", Options{}), []step{
		{0, Outbound, h.udp(Outbound, app(600)), Pass},
		{0, Inbound, h.udp(Inbound, app(60)), Pass},
		{0, Inbound, h.udp(Inbound, app(1150)), Pass},
	})
}

func TestCutAfterHandshake(t *testing.T) {
	hello, _ := captureHellos(t)
	app := func(n int) []byte { return dtlsRec(contentApplicationData, 1, n) }
	f := flow{t, client4, server4}
	ccs := dtlsRec(contentChangeCipherSpec, 0, 1)
	run(t, mustParse(t, "cut-after-handshake", Options{CutAfterBytes: 3000}), []step{
		{0, Outbound, f.udp(Outbound, hello), Pass},
		{0, Inbound, f.udp(Inbound, dtlsRec(contentHandshake, 0, 900)), Pass},
		{0, Outbound, f.udp(Outbound, append(ccs, dtlsRec(contentHandshake, 1, 40)...)), Pass},
		{0, Inbound, f.udp(Inbound, append(ccs, dtlsRec(contentHandshake, 1, 40)...)), Pass},
		{0, Outbound, f.udp(Outbound, app(1000)), Pass},
		{0, Inbound, f.udp(Inbound, app(1000)), Pass},
		{0, Outbound, f.udp(Outbound, app(999)), Pass},
		{0, Inbound, f.udp(Inbound, app(1)), Drop},
		{0, Outbound, f.udp(Outbound, app(1)), Drop},
		{0, Outbound, f.udp(Outbound, stunMessage(0x0001)), Drop},
	})
}

func TestUDPBlock(t *testing.T) {
	f, g := flow{t, client4, server4}, flow{t, client6, server6}
	frag := g.udp(Outbound, []byte("x"))
	// Insert an IPv6 fragment header in front of the UDP header.
	frag6 := append(append([]byte(nil), frag[:40]...), 17, 0, 0, 0, 0, 0, 0, 1)
	frag6 = append(frag6, frag[40:]...)
	frag6[6] = 44
	run(t, mustParse(t, "udp-block", Options{}), []step{
		{0, Outbound, f.udp(Outbound, []byte("x")), Drop},
		{0, Inbound, g.udp(Inbound, []byte("x")), Drop},
		{0, Outbound, frag6, Drop},
		{0, Outbound, f.tcp(Outbound, []byte("x")), Pass},
		{0, Inbound, g.tcp(Inbound, nil), Pass},
		{0, Inbound, []byte{0x45}, Pass},
	})
}

func TestSTUNBlock(t *testing.T) {
	f := flow{t, client4, server4}
	g := flow{t, client4, netip.MustParseAddrPort("192.0.2.3:3478")}
	steps := func(want Verdict) []step {
		return []step{
			{0, Outbound, f.udp(Outbound, stunMessage(0x0001)), want}, // request
			{0, Inbound, f.udp(Inbound, stunMessage(0x0101)), want},   // success
			{0, Inbound, f.udp(Inbound, stunMessage(0x0111)), want},   // error
			{0, Outbound, f.udp(Outbound, stunMessage(0x0011)), Pass}, // indication
			{0, Outbound, f.udp(Outbound, stunMessage(0x0003)), Pass}, // TURN allocate
			{0, Outbound, f.udp(Outbound, dtlsRec(contentApplicationData, 1, 20)), Pass},
		}
	}
	run(t, mustParse(t, "stun-block", Options{}), steps(Drop))
	only := Options{STUNAddrs: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}}
	run(t, mustParse(t, "stun-block", only), steps(Pass))
	run(t, mustParse(t, "stun-block", only), []step{{0, Outbound, g.udp(Outbound, stunMessage(0x0001)), Drop}})
}

func TestUDPThrottle(t *testing.T) {
	f := flow{t, client4, server4}
	out := f.udp(Outbound, make([]byte, 972)) // 1000-byte IP packets
	in := f.udp(Inbound, make([]byte, 972))
	p := mustParse(t, "udp-throttle", Options{ThrottleRate: 80_000, ThrottleBurst: 5000}) // 10 kB/s
	var steps []step
	for range 5 {
		steps = append(steps, step{0, Outbound, out, Pass})
	}
	steps = append(steps,
		step{0, Outbound, out, Drop},
		step{0, Inbound, in, Pass}, // the other direction has its own bucket
		step{50 * time.Millisecond, Outbound, out, Drop},
		step{100 * time.Millisecond, Outbound, out, Pass},
		step{100 * time.Millisecond, Outbound, out, Drop},
		step{100 * time.Millisecond, Outbound, f.tcp(Outbound, make([]byte, 972)), Pass},
	)
	run(t, p, steps)
}

func TestFlowTableBounded(t *testing.T) {
	ft := newFlowTable[int](4, time.Minute)
	key := func(i int) flowKey {
		return flowKey{client: netip.AddrPortFrom(client4.Addr(), uint16(i)), server: server4, proto: protoUDP}
	}
	for i := range 100 {
		*ft.put(t0, key(i)) = i
		if ft.len() > 4 {
			t.Fatalf("%d flows held, max 4", ft.len())
		}
	}
	if ft.get(t0, key(95)) != nil || *ft.get(t0, key(99)) != 99 {
		t.Error("not least recently used out")
	}
	if ft.get(t0.Add(2*time.Minute), key(99)) != nil {
		t.Error("idle flow kept")
	}
	if ft.len() != 3 {
		t.Errorf("%d flows after expiry, want 3", ft.len())
	}
}

func TestJA4(t *testing.T) {
	// A hand-built hello with GREASE, SNI, ALPN and supported_versions.
	ext := func(typ uint16, data ...byte) []byte {
		return append([]byte{byte(typ >> 8), byte(typ), 0, byte(len(data))}, data...)
	}
	var exts []byte
	exts = append(exts, ext(0x0a0a)...)
	exts = append(exts, ext(extServerName, 0, 14, 0, 0, 11, 'e', 'x', 'a', 'm', 'p', 'l', 'e', '.', 'c', 'o', 'm')...)
	exts = append(exts, ext(extALPN, 0, 6, 2, 'h', '2', 2, 'h', '3')...)
	exts = append(exts, ext(extSupportedVersions, 4, 0x2a, 0x2a, 0xfe, 0xfc)...)
	exts = append(exts, ext(extSignatureAlgorithms, 0, 4, 0x04, 0x03, 0x08, 0x04)...)
	exts = append(exts, ext(0x0017)...)
	body := []byte{0xfe, 0xfd}
	body = append(body, make([]byte, 32)...)
	body = append(body, 0, 0, 0, 6, 0x1a, 0x1a, 0xc0, 0x2f, 0xc0, 0x2b, 1, 0, 0, byte(len(exts)))
	body = append(body, exts...)
	hs := append([]byte{1, 0, 0, byte(len(body)), 0, 0, 0, 0, 0, 0, 0, byte(len(body))}, body...)
	rec := append([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(hs))}, hs...)
	h, ok := ClientHelloOf(rec)
	if !ok {
		t.Fatal("hello not parsed")
	}
	if h.ServerName != "example.com" || len(h.ALPN) != 2 || h.ALPN[0] != "h2" {
		t.Errorf("parsed %+v", h)
	}
	// d, "d2" (nDPI keeps the numerically highest: 0xfefd > 0xfefc), SNI,
	// 2 ciphers, 5 extensions, ALPN "h2"; the hashes are of
	// "c02b,c02f" and "0017,002b,000d_0403,0804" sorted: "000d,0017,002b_0403,0804".
	want := "dd2d0205h2_" + hash12("c02b,c02f", false) + "_" + hash12("000d,0017,002b_0403,0804", false)
	if got := h.JA4(); got != want {
		t.Errorf("JA4 %s, want %s", got, want)
	}
}

func TestMalformedNeverPanics(t *testing.T) {
	p := mustParse(t, strings.Join(Names(), ","), Options{})
	hello, _ := captureHellos(t)
	pkt := udpPacket(t, client4, server4, hello)
	for n := range len(pkt) {
		p.Judge(t0, Outbound, pkt[:n])
		bad := append([]byte(nil), pkt...)
		bad[n] ^= 0xff
		p.Judge(t0, Inbound, bad)
	}
}

func TestNoAllocs(t *testing.T) {
	p := mustParse(t, strings.Join(Names(), ","), Options{ThrottleRate: 1 << 30})
	f := flow{t, client4, server4}
	pkts := [][]byte{
		f.udp(Outbound, dtlsRec(contentApplicationData, 1, 500)),
		f.udp(Inbound, stunMessage(0x0011)),
		f.tcp(Outbound, []byte("GET / HTTP/1.1\r\n\r\n")),
		flow{t, client6, server6}.udp(Outbound, make([]byte, 100)),
	}
	for _, pkt := range pkts {
		p.Judge(t0, Outbound, pkt) // start tracking the flow
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, pkt := range pkts {
			p.Judge(t0, Outbound, pkt)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per round of packets, want 0", allocs)
	}
}

func BenchmarkJudge(b *testing.B) {
	p := mustParse(b, strings.Join(Names(), ","), Options{ThrottleRate: 1 << 30})
	f := flow{b, client4, server4}
	for _, bc := range []struct {
		name string
		pkt  []byte
	}{
		{"udp-appdata", f.udp(Outbound, dtlsRec(contentApplicationData, 1, 1100))},
		{"tcp", f.tcp(Outbound, make([]byte, 1400))},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.pkt)))
			for b.Loop() {
				p.Judge(t0, Outbound, bc.pkt)
			}
		})
	}
}

// len returns the number of flows held.
func (t *flowTable[T]) len() int { return len(t.m) }
