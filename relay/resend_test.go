package relay

import (
	"bytes"
	"encoding/binary"
	"io"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// kcpSeg builds one KCP segment of conversation conv.
func kcpSeg(conv uint32, cmd byte, sn uint32, data string) []byte {
	b := make([]byte, turbotunnel.KCPHeaderLen, turbotunnel.KCPHeaderLen+len(data))
	binary.LittleEndian.PutUint32(b[0:4], conv)
	b[4] = cmd
	binary.LittleEndian.PutUint16(b[6:8], 128)
	binary.LittleEndian.PutUint32(b[12:16], sn)
	binary.LittleEndian.PutUint32(b[20:24], uint32(len(data)))
	return append(b, data...)
}

func push(sn uint32) []byte { return kcpSeg(7, turbotunnel.KCPCmdPush, sn, "data") }
func ack(sn uint32) []byte  { return kcpSeg(7, turbotunnel.KCPCmdAck, sn, "") }

// packet joins segments into one KCP packet.
func packet(segs ...[]byte) []byte { return bytes.Join(segs, nil) }

// ackAt is an ACK of the transmission of sn made at ts (KCP's ms).
func ackAt(sn, ts uint32) []byte {
	b := ack(sn)
	binary.LittleEndian.PutUint32(b[8:12], ts)
	return b
}

// stamp sets the time of every whole segment of p to ts (ms), as KCP
// does when it sends them, and returns p.
func stamp(p []byte, ts uint32) []byte {
	rest := p
	for {
		seg, next, ok := turbotunnel.NextKCPSegment(rest)
		if !ok {
			return p
		}
		binary.LittleEndian.PutUint32(seg[8:12], ts)
		rest = next
	}
}

// ms converts d to KCP's milliseconds.
func ms(d time.Duration) uint32 { return uint32(d.Milliseconds()) }

// newTestFilter returns a filter for a window of wnd segments and a
// round trip of 100 ms, and the time (KCP's ms) at which to start.
func newTestFilter(wnd int) (*resendFilter, uint32) {
	f := &resendFilter{}
	f.update(100*time.Millisecond, wnd)
	return f, ms(time.Hour)
}

// pass runs p (a copy), sent at now, through f and fails unless want
// comes out.
func pass(t *testing.T, f *resendFilter, p []byte, num uint8, now uint32, want []byte) {
	t.Helper()
	in := stamp(bytes.Clone(p), now)
	want = stamp(bytes.Clone(want), now)
	out, n := f.filter(in, num)
	if !bytes.Equal(out, want) {
		t.Fatalf("filter(%x) on carrier %d = %x, want %x", p, num, out, want)
	}
	if want := countSegs(p, false) - countSegs(want, false); n.held != want {
		t.Fatalf("held %d segments, want %d", n.held, want)
	}
	if want := countSegs(want, true); f.ring != nil && num != 0 && n.sent != want {
		t.Fatalf("counted %d data segments sent, want %d", n.sent, want)
	}
}

// countSegs counts the whole segments at the start of p, or only the PUSH
// ones.
func countSegs(p []byte, push bool) int {
	n := 0
	for {
		seg, rest, ok := turbotunnel.NextKCPSegment(p)
		if !ok {
			return n
		}
		if !push || seg.Cmd() == turbotunnel.KCPCmdPush {
			n++
		}
		p = rest
	}
}

func TestResendFilterCounts(t *testing.T) {
	f, now := newTestFilter(64)
	a, b := f.addCarrier(), f.addCarrier()
	count := func(p []byte, num uint8, want resendCounts) {
		t.Helper()
		if _, n := f.filter(stamp(p, now), num); n != want {
			t.Fatalf("counts %+v, want %+v", n, want)
		}
	}
	count(packet(ack(1), push(1), push(2), push(3)), a, resendCounts{sent: 3})
	count(packet(push(2), push(4)), a, resendCounts{held: 1, sent: 1})
	f.dropCarrier(a)
	count(packet(push(1), push(5)), b, resendCounts{resent: 1, sent: 2})
	count(push(1), b, resendCounts{held: 1})
}

func TestResendFilterHoldsWhileCarrierAlive(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	// KCP's timeout fires: the carrier took it and is alive.
	now += ms(300 * time.Millisecond)
	pass(t, f, push(1), a, now, nil)
	// Held again later, still within the hold (1 s + 2 × 100 ms) of the
	// first transmission: a held resend does not move the time.
	now += ms(800 * time.Millisecond)
	pass(t, f, push(1), a, now, nil)
	// An ACK beside it goes out alone.
	pass(t, f, packet(ack(9), push(1)), a, now, ack(9))
}

func TestResendFilterReleasesWhenCarrierDies(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	b := f.addCarrier()
	pass(t, f, packet(push(1), push(2)), a, now, packet(push(1), push(2)))
	f.dropCarrier(a)
	now += ms(200 * time.Millisecond)
	pass(t, f, push(1), b, now, push(1))
	// The release went out on b, which is alive: the next resend is held.
	pass(t, f, push(1), b, now+ms(200*time.Millisecond), nil)
	// A carrier's end may be reported twice.
	f.dropCarrier(a)
	pass(t, f, push(2), b, now, push(2))
}

func TestResendFilterReleasesAfterHold(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(5), a, now, push(5))
	hold := resendHold(100 * time.Millisecond)
	pass(t, f, push(5), a, now+ms(hold-50*time.Millisecond), nil)
	now += ms(hold + 20*time.Millisecond)
	pass(t, f, push(5), a, now, push(5)) // a queue may have dropped it
	pass(t, f, push(5), a, now+ms(time.Millisecond), nil)
}

func TestResendHoldFollowsRoundTrip(t *testing.T) {
	for _, tc := range []struct{ srtt, want time.Duration }{
		{0, time.Second},
		{150 * time.Millisecond, 1300 * time.Millisecond},
		{time.Second, 3 * time.Second},
		{10 * time.Second, maxResendHold},
	} {
		if got := resendHold(tc.srtt); got != tc.want {
			t.Errorf("resendHold(%v) = %v, want %v", tc.srtt, got, tc.want)
		}
	}
	// The hold grows when the round trip does.
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	f.update(time.Second, 64)
	pass(t, f, push(1), a, now+ms(2*time.Second), nil)
}

func TestResendFilterReleasesWhatAQueueDropped(t *testing.T) {
	f, now := newTestFilter(64)
	a, b := f.addCarrier(), f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	pass(t, f, push(2), a, now+ms(40*time.Millisecond), push(2))
	pass(t, f, push(3), b, now+ms(80*time.Millisecond), push(3))
	later := now + ms(300*time.Millisecond)
	// An ACK of an earlier transmission of 2 says nothing of 1, nor does
	// one for another carrier, nor one within the same tick of the time.
	f.acked(ackAt(2, now))
	f.acked(ackAt(3, now+ms(80*time.Millisecond)))
	f.acked(kcpSeg(9, turbotunnel.KCPCmdAck, 2, "")) // another conversation
	pass(t, f, push(1), a, later, nil)
	// The client acknowledged 2, which went out on a after 1: a's path is
	// in order, so 1 was dropped on the way.
	f.acked(packet(push(7), ackAt(2, now+ms(40*time.Millisecond))))
	pass(t, f, push(1), a, later, push(1))
	// Its new transmission is held in turn.
	pass(t, f, push(1), a, later+ms(100*time.Millisecond), nil)
	// 3, on b, is held: nothing later on b was acknowledged.
	pass(t, f, push(3), a, later, nil)
	// A carrier's end forgets what it delivered: its number, handed out
	// again, starts afresh.
	f.dropCarrier(a)
	pass(t, f, push(4), b, later, push(4))
	pass(t, f, push(5), b, later+ms(40*time.Millisecond), push(5))
	f.acked(ackAt(5, later+ms(40*time.Millisecond)))
	pass(t, f, push(4), b, later+ms(300*time.Millisecond), push(4))
}

func TestResendFilterDeliveredSlots(t *testing.T) {
	f, now := newTestFilter(64)
	var nums []uint8
	sendTwo := func(n uint8, sn, at uint32) {
		t.Helper()
		pass(t, f, push(sn), n, at, push(sn))
		pass(t, f, push(sn+1), n, at+ms(40*time.Millisecond), push(sn+1))
		f.acked(ackAt(sn+1, at+ms(40*time.Millisecond)))
	}
	for i := range deliveredSlots + 2 {
		n := f.addCarrier()
		nums = append(nums, n)
		sendTwo(n, uint32(10*i), now+uint32(i)*ms(50*time.Millisecond))
	}
	// The last carriers took the slots of those acknowledged longest ago;
	// their dropped segments still go out at once, the first ones' wait.
	later := now + ms(time.Second)
	for i, n := range nums {
		sn := uint32(10 * i)
		var want []byte
		if i >= 2 {
			want = push(sn)
		}
		pass(t, f, push(sn), n, later, want)
	}
	// A dead carrier's slot goes first.
	f.dropCarrier(nums[3])
	c := f.addCarrier()
	sendTwo(c, 60, later)
	pass(t, f, push(60), c, later+ms(100*time.Millisecond), push(60))
}

func TestResendFilterHoldBack(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	later := now + ms(300*time.Millisecond)
	holdBack := func(p, want []byte) {
		t.Helper()
		out, held := f.holdBack(stamp(bytes.Clone(p), later))
		if want = stamp(bytes.Clone(want), later); !bytes.Equal(out, want) {
			t.Fatalf("holdBack(%x) = %x, want %x", p, out, want)
		}
		if held != countSegs(p, false)-countSegs(want, false) {
			t.Fatalf("held %d", held)
		}
	}
	holdBack(packet(ack(1), push(1), push(2)), packet(ack(1), push(2)))
	// It records nothing: 2 is new to the carrier's writer.
	pass(t, f, push(2), a, later, push(2))
	// Nor does another conversation reset the record.
	other := kcpSeg(8, turbotunnel.KCPCmdPush, 1, "x")
	holdBack(other, other)
	holdBack(push(1), nil)
}

func TestShardConnHoldsBack(t *testing.T) {
	pconn := turbotunnel.NewQueuePacketConn(shardAddr(0), time.Minute, turbotunnel.MTU)
	defer pconn.Close()
	var filters resendFilters
	var held, silentDrops atomic.Uint64
	conn := shardConn{pconn, &silentSet{}, &silentDrops, &filters, &held}
	id := turbotunnel.NewClientID()
	addr := id.Addr()
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	filters.add(id, f)

	write := func(p []byte) {
		t.Helper()
		if n, err := conn.WriteTo(stamp(p, now), addr); n != len(p) || err != nil {
			t.Fatalf("WriteTo = %d, %v; want %d, nil", n, err, len(p))
		}
	}
	write(push(1))                 // held: nothing queued
	write(packet(ack(3), push(1))) // the ACK alone
	write(push(2))
	queue := pconn.OutgoingQueue(addr)
	for _, want := range [][]byte{stamp(ack(3), now), stamp(push(2), now)} {
		select {
		case p := <-queue:
			if !bytes.Equal(p, want) {
				t.Fatalf("queued %x, want %x", p, want)
			}
			pconn.Restore(p)
		default:
			t.Fatalf("nothing queued, want %x", want)
		}
	}
	select {
	case p := <-queue:
		t.Fatalf("queued %x besides", p)
	default:
	}
	if held.Load() != 2 {
		t.Errorf("held %d, want 2", held.Load())
	}
	// Once the session has ended, packets pass as they are.
	filters.remove(id)
	write(push(1))
	if p := <-queue; !bytes.Equal(p, stamp(push(1), now)) {
		t.Fatalf("queued %x, want %x", p, push(1))
	}
}

func TestResendFilterMultipath(t *testing.T) {
	f, now := newTestFilter(64)
	a, b := f.addCarrier(), f.addCarrier()
	if a == b || a == 0 || b == 0 {
		t.Fatalf("carrier numbers %d, %d", a, b)
	}
	pass(t, f, push(1), a, now, push(1))
	pass(t, f, push(2), b, now, push(2))
	// Resent through the other carrier while the first is alive: a copy.
	now += ms(300 * time.Millisecond)
	pass(t, f, push(1), b, now, nil)
	pass(t, f, push(2), a, now, nil)
	f.dropCarrier(b)
	pass(t, f, packet(push(1), push(2)), a, now, push(2))
}

func TestResendFilterMultiSegmentPackets(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	wask := kcpSeg(7, turbotunnel.KCPCmdWask, 0, "")
	wins := kcpSeg(7, turbotunnel.KCPCmdWins, 0, "")
	pass(t, f, packet(ack(3), push(1), push(2)), a, now, packet(ack(3), push(1), push(2)))
	// The held ones are cut wherever they are; everything else keeps its
	// order.
	pass(t, f, packet(ack(4), push(1), wask, push(3), push(2), wins, push(4)), a, now,
		packet(ack(4), wask, push(3), wins, push(4)))
	pass(t, f, packet(push(1), push(2), push(3), push(4)), a, now, nil)
}

func TestResendFilterMalformedPackets(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	short := push(9)[:turbotunnel.KCPHeaderLen-1]
	cut := push(9)[:turbotunnel.KCPHeaderLen+2]
	huge := binary.LittleEndian.AppendUint32(push(9)[:20], 0xffffffff)
	for _, p := range [][]byte{nil, {1}, short, cut, huge} {
		pass(t, f, p, a, now, p)
		// Behind a held segment the rest is kept as it is.
		pass(t, f, packet(push(1), p), a, now, p)
		pass(t, f, packet(ack(1), push(1), p), a, now, packet(ack(1), p))
	}
	// A truncated PUSH records nothing.
	pass(t, f, cut, a, now, cut)
	pass(t, f, push(9), a, now, push(9))
}

func TestResendFilterNewConversation(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	pass(t, f, push(1), a, now, push(1))
	// The ClientID's next session starts its numbers again.
	next := kcpSeg(8, turbotunnel.KCPCmdPush, 1, "new")
	pass(t, f, next, a, now, next)
	pass(t, f, next, a, now, nil)
}

func TestResendFilterLaps(t *testing.T) {
	f, now := newTestFilter(60) // a ring of 64
	if len(f.ring) != 64 {
		t.Fatalf("ring of %d entries for a window of 60, want 64", len(f.ring))
	}
	a := f.addCarrier()
	pass(t, f, push(3), a, now, push(3))
	// The same slot a lap later is a new segment; and the one before it,
	// whose entry it took, passes when resent.
	pass(t, f, push(3+64), a, now, push(3+64))
	pass(t, f, push(3), a, now, push(3))
	// Around the wrap of sn.
	pass(t, f, push(0xffffffff), a, now, push(0xffffffff))
	pass(t, f, push(0xffffffff), a, now, nil)
	pass(t, f, push(63), a, now, push(63))
}

func TestResendFilterInactive(t *testing.T) {
	// Before the session has sent (no ring), and for a carrier without a
	// number, packets pass untouched.
	f := &resendFilter{}
	a := f.addCarrier()
	pass(t, f, push(1), a, 0, push(1))
	pass(t, f, push(1), a, 0, push(1))
	f.update(0, 64)
	pass(t, f, push(1), 0, 0, push(1))
	pass(t, f, push(1), 0, 0, push(1))
}

func TestResendFilterGrows(t *testing.T) {
	// A ring that grows keeps what is in flight, also across sn's wrap.
	for _, base := range []uint32{1000, 0xffffffff - 70} {
		f, now := newTestFilter(64)
		a := f.addCarrier()
		sendAll := func(from, to uint32, want bool) {
			t.Helper()
			for sn := from; sn != to; sn++ {
				var out []byte
				if want {
					out = push(sn)
				}
				pass(t, f, push(sn), a, now, out)
			}
		}
		sendAll(base-200, base-100, true)  // long acknowledged, a lap behind
		sendAll(base, base+64, true)       // a window in flight
		f.update(100*time.Millisecond, 64) // no change
		f.update(100*time.Millisecond, 65)
		if len(f.ring) != 128 {
			t.Fatalf("ring of %d entries for a window of 65, want 128", len(f.ring))
		}
		sendAll(base, base+64, false) // still held
		sendAll(base+64, base+128, true)
		f.update(100*time.Millisecond, 3000)
		if len(f.ring) != 4096 {
			t.Fatalf("ring of %d entries for a window of 3000, want 4096", len(f.ring))
		}
		sendAll(base, base+128, false)
		sendAll(base+128, base+200, true)
		f.update(100*time.Millisecond, 32) // a smaller window keeps the ring
		if len(f.ring) != 4096 {
			t.Fatalf("ring of %d entries after the window shrank, want 4096", len(f.ring))
		}
		sendAll(base, base+200, false)
	}
}

func TestResendFilterCarrierNumbers(t *testing.T) {
	f := &resendFilter{}
	seen := map[uint8]bool{}
	for range maxCarrierNum {
		n := f.addCarrier()
		if n == 0 || seen[n] {
			t.Fatalf("carrier number %d handed out twice or zero", n)
		}
		seen[n] = true
	}
	if n := f.addCarrier(); n != 0 {
		t.Fatalf("a 256th live carrier got number %d, want 0", n)
	}
	f.dropCarrier(17)
	if n := f.addCarrier(); n != 17 {
		t.Fatalf("got number %d, want the free 17", n)
	}
}

// TestResendFilterAllocs locks the filter at no allocation per packet,
// whether it holds segments or not: it runs on every outgoing packet.
func TestResendFilterAllocs(t *testing.T) {
	f, now := newTestFilter(1024)
	a := f.addCarrier()
	p := stamp(packet(ack(1), push(1), push(2)), now)
	buf := make([]byte, len(p))
	sn := uint32(3)
	got := testing.AllocsPerRun(1000, func() {
		copy(buf, p)
		f.filter(buf, a) // held
		binary.LittleEndian.PutUint32(buf[turbotunnel.KCPHeaderLen+12:], sn)
		f.filter(buf, a) // a new one passes
		f.acked(p)
		sn++
	})
	if got != 0 {
		t.Errorf("%v allocations per packet, want 0", got)
	}
}

// TestResendFilterSize states what the filter costs per ClientID: a fixed
// part in every clientState, and a ring of 4 bytes per segment of the
// session's largest send window, once it sends.
func TestResendFilterSize(t *testing.T) {
	fixed := unsafe.Sizeof(resendFilter{})
	entry := unsafe.Sizeof(resendEntry(0))
	f := &resendFilter{}
	f.update(0, initialSendWindow)
	first := uintptr(len(f.ring)) * entry
	f.update(0, maxSendWindow)
	largest := uintptr(len(f.ring)) * entry
	t.Logf("resend filter per ClientID: %d bytes, ring %d bytes at the first window (%d segments), %d at the largest (%d)",
		fixed, first, initialSendWindow, largest, maxSendWindow)
	if fixed > 112 || entry != 4 || first > 256 || largest > 32<<10 {
		t.Errorf("resend filter grew: %d bytes fixed, %d per entry, ring %d and %d bytes", fixed, entry, first, largest)
	}
}

// FuzzResendFilter runs arbitrary packets through a filter twice, as a
// first transmission and as a resend on the same live carrier within the
// hold: nothing panics, and what comes out is what a plain model of the
// filter keeps (every segment but PUSH segments sent before, in order, and
// whatever does not parse as it is).
func FuzzResendFilter(f *testing.F) {
	f.Add(packet(ack(1), push(1), push(2)))
	f.Add(packet(push(1), push(1)))
	f.Add(packet(push(1), push(257), kcpSeg(8, turbotunnel.KCPCmdPush, 1, "")))
	f.Add(append(push(4), 0, 1, 2))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, p []byte) {
		rf, _ := newTestFilter(256)
		a := rf.addCarrier()
		m := &filterModel{ring: map[uint32][2]uint32{}}
		for i := range 2 {
			out, n := rf.filter(bytes.Clone(p), a)
			want, wantN := m.filter(p, rf.hold)
			if !bytes.Equal(out, want) || n != wantN {
				t.Fatalf("pass %d of %x: %x (%+v), want %x (%+v)", i, p, out, n, want, wantN)
			}
		}
	})
}

// FuzzResendFilterAcked sends a packet, reads arbitrary ACKs from the
// client, and sends the packet again: nothing panics, and what goes out
// is the packet less some of its PUSH segments.
func FuzzResendFilterAcked(f *testing.F) {
	f.Add(packet(push(1), push(2)), ackAt(2, 0))
	f.Add(packet(ack(1), push(1)), packet(ackAt(1, 0), push(3), ackAt(1, 5)))
	f.Add([]byte{1}, []byte{2})
	f.Fuzz(func(t *testing.T, out, in []byte) {
		rf, _ := newTestFilter(256)
		a := rf.addCarrier()
		rf.filter(bytes.Clone(out), a)
		rf.acked(in)
		got, _ := rf.filter(bytes.Clone(out), a)
		rest := got
		p := out
		for {
			seg, next, ok := turbotunnel.NextKCPSegment(p)
			if !ok {
				break
			}
			p = next
			if bytes.HasPrefix(rest, seg) {
				rest = rest[len(seg):]
			} else if seg.Cmd() != turbotunnel.KCPCmdPush {
				t.Fatalf("%x became %x: a segment other than PUSH went missing", out, got)
			}
		}
		if !bytes.Equal(rest, p) {
			t.Fatalf("%x became %x", out, got)
		}
	})
}

// filterModel is the filter with a ring of 256 and one live carrier within
// the hold, written plainly.
type filterModel struct {
	conv    uint32
	started bool
	ring    map[uint32][2]uint32 // sn mod 256 -> the lap of the sn last sent, and when
	lastSN  uint32               // the highest sn sent, in circular order
}

func (m *filterModel) filter(p []byte, hold uint16) ([]byte, resendCounts) {
	var out []byte
	var n resendCounts
	for len(p) > 0 {
		seg, rest, ok := turbotunnel.NextKCPSegment(p)
		if !ok {
			out = append(out, p...)
			break
		}
		p = rest
		if seg.Cmd() == turbotunnel.KCPCmdPush {
			sn := seg.SN()
			if seg.Conv() != m.conv || !m.started {
				clear(m.ring)
				m.conv, m.lastSN, m.started = seg.Conv(), sn-1, true
			}
			slot, lap, at := sn%256, sn/256%256, seg.TS()>>4
			if e, ok := m.ring[slot]; ok && e[0] == lap && uint16(at-e[1]) < hold {
				n.held++
				continue
			}
			m.ring[slot] = [2]uint32{lap, at}
			if int32(sn-m.lastSN) > 0 {
				m.lastSN = sn
			} else {
				n.resent++
			}
			n.sent++
		}
		out = append(out, seg...)
	}
	return out, n
}

// TestCarrierHoldsResends runs the filter where the relay runs it, in a
// carrier's writer: a resend of what the carrier took is not written, an
// ACK behind it is, and the path allocates nothing per packet.
func TestCarrierHoldsResends(t *testing.T) {
	h := newAllocHarness(t)
	st := h.clientState(t)
	st.resend.update(100*time.Millisecond, 1024)

	writeAndRead := func(p, want []byte) {
		t.Helper()
		if _, err := h.pconn.WriteTo(p, h.id); err != nil {
			t.Fatal(err)
		}
		chunk := chunked(t, want)
		out := make([]byte, serverFrameLen(len(chunk)))
		if _, err := io.ReadFull(h.peer, out); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out[len(out)-len(chunk):], chunk) {
			t.Fatalf("message out: % x, want a frame holding % x", out, chunk)
		}
	}
	writeAndRead(push(1), push(1))
	if _, err := h.pconn.WriteTo(push(1), h.id); err != nil { // held
		t.Fatal(err)
	}
	writeAndRead(packet(ack(2), push(1), push(2)), packet(ack(2), push(2)))
	writeAndRead(ack(3), ack(3)) // nothing of push(1) came between
	if st := h.r.Stats(); st.ResendsHeld != 2 || st.ResendsSent != 0 || st.SegmentsSent != 2 {
		t.Errorf("ResendsHeld, ResendsSent, SegmentsSent = %d, %d, %d; want 2, 0, 2", st.ResendsHeld, st.ResendsSent, st.SegmentsSent)
	}

	if raceEnabled {
		return // allocation counts: see TestCarrierAllocsPerPacket
	}
	sn := uint32(10)
	pkt := push(0)
	out := make([]byte, serverFrameLen(len(chunked(t, pkt))))
	checkAllocs(t, "out, a new segment and a held resend", 0, func() {
		binary.LittleEndian.PutUint32(pkt[12:16], sn)
		sn++
		for range 2 {
			if _, err := h.pconn.WriteTo(pkt, h.id); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := io.ReadFull(h.peer, out); err != nil {
			t.Fatal(err)
		}
	})
	// The writer has handled every packet before this one (the queue is
	// in order): each run held one, and checkAllocs ran 11 more (its own
	// warm-up and testing.AllocsPerRun's).
	writeAndRead(ack(4), ack(4))
	if held, want := h.r.Stats().ResendsHeld, uint64(2+11+allocRuns); held != want {
		t.Errorf("ResendsHeld = %d, want %d", held, want)
	}
}

// TestCarrierEndReleasesResends checks the wiring of a carrier's end: its
// number is marked dead, so that what it took goes out again.
func TestCarrierEndReleasesResends(t *testing.T) {
	h := newAllocHarness(t)
	st := h.clientState(t)
	st.resend.mu.Lock()
	num := st.resend.lastNum
	alive := st.resend.alive(num)
	st.resend.mu.Unlock()
	if num == 0 || !alive {
		t.Fatalf("the harness's carrier has number %d, alive %v", num, alive)
	}
	h.peer.Close()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		st.resend.mu.Lock()
		alive = st.resend.alive(num)
		st.resend.mu.Unlock()
		if !alive {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("carrier number still alive a minute after its proxy went")
		}
	}
}

// withUna sets the una (cumulative acknowledgement) of segment seg.
func withUna(seg []byte, una uint32) []byte {
	binary.LittleEndian.PutUint32(seg[16:20], una)
	return seg
}

// TestResendFilterCutsWhatTheClientHolds: once a packet from the client
// says that it holds every segment below its una (a window probe through
// a standby proxy that takes over), the copies of them that KCP resent
// after the carrier that took them died are cut.
func TestResendFilterCutsWhatTheClientHolds(t *testing.T) {
	f, now := newTestFilter(64)
	a := f.addCarrier()
	sent := packet(push(1), push(2), push(3), push(4))
	pass(t, f, sent, a, now, sent)
	f.dropCarrier(a) // its proxy was killed
	b := f.addCarrier()
	f.acked(withUna(kcpSeg(7, turbotunnel.KCPCmdWask, 0, ""), 3))
	pass(t, f, sent, b, now+1, packet(push(3), push(4)))
	// An older una changes nothing.
	f.acked(withUna(ack(3), 2))
	pass(t, f, packet(push(2), push(5)), b, now+2, packet(push(5)))
}
