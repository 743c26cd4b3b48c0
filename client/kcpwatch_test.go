package client

import (
	"encoding/binary"
	"math"
	"testing"
	"time"

	"github.com/xtaci/kcp-go/v5"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// kcpPair is two kcp-go state machines whose output is captured, so the
// tests classify the bytes kcp-go really writes.
type kcpPair struct {
	a, b       *kcp.KCP
	outA, outB [][]byte
}

func newKCPPair() *kcpPair {
	p := &kcpPair{}
	p.a = kcp.NewKCP(1, func(buf []byte, size int) { p.outA = append(p.outA, append([]byte(nil), buf[:size]...)) })
	p.b = kcp.NewKCP(1, func(buf []byte, size int) { p.outB = append(p.outB, append([]byte(nil), buf[:size]...)) })
	for _, k := range []*kcp.KCP{p.a, p.b} {
		k.NoDelay(0, 0, 0, 1)
		k.SetMtu(turbotunnel.MTU)
		k.WndSize(turbotunnel.Window, turbotunnel.Window)
	}
	return p
}

func segment(cmd byte, data string) []byte {
	h := make([]byte, turbotunnel.KCPHeaderLen, turbotunnel.KCPHeaderLen+len(data))
	binary.LittleEndian.PutUint32(h[0:], 1)
	h[4] = cmd
	binary.LittleEndian.PutUint32(h[20:], uint32(len(data)))
	return append(h, data...)
}

func TestKCPExpectsReplyOnKCPOutput(t *testing.T) {
	p := newKCPPair()
	p.a.Send([]byte("hello relay"))
	p.a.Update()
	if len(p.outA) == 0 {
		t.Fatal("kcp wrote nothing for data")
	}
	for _, pkt := range p.outA {
		if !kcpExpectsReply(pkt) {
			t.Errorf("data packet % x: expects no reply", pkt)
		}
		p.b.Input(pkt, kcp.IKCP_PACKET_REGULAR, false)
	}
	p.b.Update()
	if len(p.outB) == 0 {
		t.Fatal("kcp wrote no acknowledgement")
	}
	for _, pkt := range p.outB {
		if kcpExpectsReply(pkt) {
			t.Errorf("acknowledgement % x: expects a reply", pkt)
		}
	}
	// An acknowledgement flushed together with data expects a reply. (A
	// fresh pair: a KCP's first Update flushes at once.)
	p = newKCPPair()
	p.a.Send([]byte("more"))
	p.a.Update()
	for _, pkt := range p.outA {
		p.b.Input(pkt, kcp.IKCP_PACKET_REGULAR, false)
	}
	p.b.Send([]byte("reply"))
	p.b.Update()
	if len(p.outB) != 1 {
		t.Fatalf("kcp wrote %d packets for an acknowledgement and data, want 1", len(p.outB))
	}
	if pkt := p.outB[0]; pkt[4] != turbotunnel.KCPCmdAck || !kcpExpectsReply(pkt) {
		t.Errorf("acknowledgement and data % x: expects no reply", pkt)
	}
}

func TestKCPExpectsReply(t *testing.T) {
	cat := func(bs ...[]byte) []byte {
		var out []byte
		for _, b := range bs {
			out = append(out, b...)
		}
		return out
	}
	tests := []struct {
		name string
		p    []byte
		want bool
	}{
		{"empty", nil, false},
		{"short header", segment(turbotunnel.KCPCmdPush, "")[:turbotunnel.KCPHeaderLen-1], false},
		{"push", segment(turbotunnel.KCPCmdPush, "data"), true},
		{"empty push", segment(turbotunnel.KCPCmdPush, ""), true},
		{"window probe", segment(turbotunnel.KCPCmdWask, ""), true},
		{"ack", segment(turbotunnel.KCPCmdAck, ""), false},
		{"window announcement", segment(turbotunnel.KCPCmdWins, ""), false},
		{"acks then push", cat(segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdPush, "d")), true},
		{"ack then probe", cat(segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdWask, "")), true},
		{"unknown command", segment(99, ""), false},
		{"unknown command before push", cat(segment(99, ""), segment(turbotunnel.KCPCmdPush, "")), false},
		{"length past the end", segment(turbotunnel.KCPCmdAck, "abc")[:turbotunnel.KCPHeaderLen+2], false},
		{"ack then a truncated push header", cat(segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdPush, "")[:10]), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kcpExpectsReply(tt.p); got != tt.want {
				t.Errorf("kcpExpectsReply = %v, want %v", got, tt.want)
			}
		})
	}
}

// FuzzKCPExpectsReply: any bytes are classified without panicking, and a
// packet answers true only if it holds a whole data or probe header.
func FuzzKCPExpectsReply(f *testing.F) {
	f.Add(segment(turbotunnel.KCPCmdPush, "data"))
	f.Add(append(segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdWask, "")...))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, p []byte) {
		if kcpExpectsReply(p) && len(p) < turbotunnel.KCPHeaderLen {
			t.Fatalf("short packet % x expects a reply", p)
		}
	})
}

func BenchmarkKCPExpectsReply(b *testing.B) {
	pkt := append(segment(turbotunnel.KCPCmdAck, ""), segment(turbotunnel.KCPCmdPush, string(make([]byte, 1300)))...)
	b.ReportAllocs()
	for b.Loop() {
		if !kcpExpectsReply(pkt) {
			b.Fatal("false")
		}
	}
}

// TestKCPProbeAnswered: a probe made from kcp-go's own outgoing packets is
// accepted by the far end's kcp-go, which answers it with its window (WINS)
// at its next flush.
func TestKCPProbeAnswered(t *testing.T) {
	var k kcpProber
	if k.probe() != nil {
		t.Fatal("a probe before the first packet")
	}
	p := newKCPPair()
	p.a.Send([]byte("data"))
	p.a.Update()
	for _, pkt := range p.outA {
		k.expectsReply(pkt)
	}
	probe := k.probe()
	if !kcpExpectsReply(probe) {
		t.Errorf("probe % x expects no reply", probe)
	}
	if ret := p.b.Input(probe, kcp.IKCP_PACKET_REGULAR, false); ret != 0 {
		t.Fatalf("the far end refused the probe: Input = %d", ret)
	}
	p.b.Update()
	wins := 0
	for _, pkt := range p.outB {
		for seg, rest, ok := turbotunnel.NextKCPSegment(pkt); ok; seg, rest, ok = turbotunnel.NextKCPSegment(rest) {
			if seg.Cmd() == turbotunnel.KCPCmdWins {
				wins++
			}
		}
	}
	if wins != 1 {
		t.Errorf("the far end sent %d window announcements, want 1: % x", wins, p.outB)
	}
}

// TestKCPAcksOnKCPOutput follows kcp-go's real packets: data sent is
// unacknowledged until the peer's answer comes back.
func TestKCPAcksOnKCPOutput(t *testing.T) {
	p := newKCPPair()
	var acks kcpAcks
	if !acks.allAcked() {
		t.Fatal("nothing sent, yet not all acknowledged")
	}
	p.a.Send(make([]byte, 3*turbotunnel.MTU)) // several segments
	p.a.Update()
	for _, pkt := range p.outA {
		acks.sent(pkt)
		p.b.Input(pkt, kcp.IKCP_PACKET_REGULAR, false)
	}
	if acks.allAcked() {
		t.Fatal("data sent, none acknowledged, yet all acknowledged")
	}
	now := time.Now()
	if !acks.quietFor(time.Hour, now) {
		t.Error("nothing received, yet not quiet")
	}
	p.b.Update()
	for _, pkt := range p.outB {
		acks.received(pkt, now)
	}
	if !acks.allAcked() {
		t.Error("the peer acknowledged everything, yet not all acknowledged")
	}
	if acks.quietFor(time.Second, now.Add(time.Second/2)) || !acks.quietFor(time.Second, now.Add(time.Second)) {
		t.Error("quietFor does not count from the last packet received")
	}
}

// TestKCPAcksOrder: retransmissions and packets arriving out of order move
// nothing back, across the wrap of sequence numbers.
func TestKCPAcksOrder(t *testing.T) {
	withSN := func(cmd byte, sn, una uint32) []byte {
		p := segment(cmd, "x")
		binary.LittleEndian.PutUint32(p[12:], sn)
		binary.LittleEndian.PutUint32(p[16:], una)
		return p
	}
	var acks kcpAcks
	now := time.Now()
	acks.received(withSN(turbotunnel.KCPCmdAck, 0, math.MaxUint32-1), now)
	acks.sent(withSN(turbotunnel.KCPCmdPush, math.MaxUint32, 0))
	acks.sent(withSN(turbotunnel.KCPCmdPush, 1, 0)) // wrapped
	acks.sent(withSN(turbotunnel.KCPCmdPush, 0, 0)) // a retransmission
	acks.sent(withSN(turbotunnel.KCPCmdAck, 7, 0))  // not data
	acks.received(withSN(turbotunnel.KCPCmdAck, 0, 1), now)
	if acks.allAcked() {
		t.Fatal("sn 1 unacknowledged, yet all acknowledged")
	}
	acks.received(withSN(turbotunnel.KCPCmdAck, 0, 2), now)
	acks.received(withSN(turbotunnel.KCPCmdAck, 0, 0), now) // late
	if !acks.allAcked() {
		t.Error("una 2 covers sn 1, yet not all acknowledged")
	}
}
