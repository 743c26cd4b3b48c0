package censor

import (
	"strings"
	"testing"
	"time"
)

// FuzzClientHello feeds arbitrary datagrams and TCP payloads to every
// hello parser; seeds (testdata/fuzz/FuzzClientHello) are real pion,
// covert-dtls and crypto/tls hellos.
func FuzzClientHello(f *testing.F) {
	f.Fuzz(func(t *testing.T, b []byte) {
		if h, ok := ClientHelloOf(b); ok {
			if j := h.JA4(); len(j) != 36 {
				t.Errorf("JA4 %q is not 36 characters", j)
			}
		}
		if h, ok := tlsClientHello(b); ok {
			_ = h.JA4()
		}
		matches2022(b)
		isSTUNBinding(b)
	})
}

// FuzzJudge feeds arbitrary packets, in either direction, through a Chain
// of every program; seeds (testdata/fuzz/FuzzJudge) are IPv4 and IPv6
// packets carrying hellos, STUN, DTLS records and TCP.
func FuzzJudge(f *testing.F) {
	p, err := Parse(strings.Join(Names(), ","), Options{MaxFlows: 64})
	if err != nil {
		f.Fatal(err)
	}
	now := t0
	f.Fuzz(func(t *testing.T, pkt []byte, inbound bool) {
		now = now.Add(time.Millisecond)
		dir := Outbound
		if inbound {
			dir = Inbound
		}
		if v := p.Judge(now, dir, pkt); v != Pass && v != Drop {
			t.Errorf("verdict %d", v)
		}
	})
}
