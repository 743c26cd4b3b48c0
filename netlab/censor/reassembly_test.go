package censor

import (
	"net/netip"
	"testing"
	"time"
)

// fragmentHello splits the ClientHello of the one-record datagram hello
// into two handshake fragments, each in a record of its own, and returns
// the two records.
func fragmentHello(t *testing.T, hello []byte) (first, second []byte) {
	t.Helper()
	rec, _, ok := nextRecord(hello)
	if !ok || rec.typ != contentHandshake {
		t.Fatal("not a handshake record")
	}
	m := rec.body
	length := int(m[1])<<16 | int(m[2])<<8 | int(m[3])
	body := m[dtlsHandshakeHeaderLen : dtlsHandshakeHeaderLen+length]
	mk := func(off, n int) []byte {
		hs := append([]byte(nil), m[:dtlsHandshakeHeaderLen]...)
		hs[6], hs[7], hs[8] = byte(off>>16), byte(off>>8), byte(off)
		hs[9], hs[10], hs[11] = byte(n>>16), byte(n>>8), byte(n)
		hs = append(hs, body[off:off+n]...)
		r := append([]byte(nil), hello[:dtlsRecordHeaderLen]...)
		r[11], r[12] = byte(len(hs)>>8), byte(len(hs))
		return append(r, hs...)
	}
	half := length / 2
	return mk(0, half), mk(half, length-half)
}

// TestHelloReassembly: a ClientHello in two fragments, in two datagrams
// (either order) or two records of one datagram, gives the JA4 of the
// whole hello, and the programs judge it as they judge the whole one.
func TestHelloReassembly(t *testing.T) {
	pion, _ := captureHellos(t)
	want, ok := JA4OfDatagram(pion)
	if !ok {
		t.Fatal("no JA4 for pion's hello")
	}
	a, b := fragmentHello(t, pion)
	if _, ok := JA4OfDatagram(a); ok {
		t.Fatal("a first fragment alone gave a JA4")
	}
	for name, dgs := range map[string][][]byte{
		"two datagrams":      {a, b},
		"reordered":          {b, a},
		"one datagram":       {append(append([]byte(nil), a...), b...)},
		"fragment repeated":  {a, a, b},
		"stun before, too":   {stunMessage(0x0001), a, b},
		"second fragment is": {b, b, a},
	} {
		if got, ok := JA4OfDatagrams(dgs); !ok || got != want {
			t.Errorf("%s: JA4 %q %v, want %q", name, got, ok, want)
		}
	}

	f := flow{t, client4, server4}
	ms := time.Millisecond
	run(t, mustParse(t, "dtls-ja4-block", Options{}), []step{
		{0, Inbound, f.udp(Inbound, a), Pass},
		{0, Inbound, f.udp(Inbound, b), Pass},
		{time.Second, Outbound, f.udp(Outbound, dtlsRec(contentApplicationData, 1, 100)), Drop},
	})
	g := flow{t, client4, netip.MustParseAddrPort("198.51.100.8:443")}
	run(t, mustParse(t, "dtls-allowlist", Options{AllowJA4: []string{want}}), []step{
		{0, Inbound, g.udp(Inbound, a), Pass},
		{0, Inbound, g.udp(Inbound, b), Pass},
		{10 * ms, Outbound, g.udp(Outbound, dtlsRec(contentApplicationData, 1, 100)), Pass},
	})
	h := flow{t, client4, netip.MustParseAddrPort("198.51.100.9:443")}
	run(t, mustParse(t, "dtls-allowlist", Options{AllowJA4: []string{"t13d000000_000000000000_000000000000"}}), []step{
		{0, Inbound, h.udp(Inbound, a), Pass},
		{0, Inbound, h.udp(Inbound, b), Drop},
		{10 * ms, Outbound, h.udp(Outbound, dtlsRec(contentApplicationData, 1, 100)), Drop},
	})
}

// TestHelloReassemblyGivesUp: fragments that disagree or claim too much
// end the reassembly without a hello.
func TestHelloReassemblyGivesUp(t *testing.T) {
	pion, _ := captureHellos(t)
	a, _ := fragmentHello(t, pion)
	huge := append([]byte(nil), a...)
	huge[dtlsRecordHeaderLen+1] = 0x10 // length 1 MiB and more
	var r HelloReassembler
	if _, ok := r.Add(huge); ok || !r.Failed() {
		t.Errorf("a hello claiming over %d bytes: ok %v, failed %v", maxHelloLen, ok, r.Failed())
	}
	if _, ok := r.Add(pion); ok {
		t.Error("a reassembler that gave up returned a hello")
	}
}

func FuzzHelloReassembler(f *testing.F) {
	f.Add([]byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 12, 1, 0, 0, 4, 0, 0, 0, 0, 2, 0, 0, 2}, []byte{22, 0xfe, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 14, 1, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 2, 0xfe, 0xfd})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		var r HelloReassembler
		r.Add(a)
		r.Add(b)
		r.Add(a)
	})
}
