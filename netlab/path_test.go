package netlab

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// recorder is a packetWriter that keeps what the path writes, with the
// (fake) time it was written.
type recorder struct {
	mu   sync.Mutex
	pkts [][]byte
	at   []time.Time
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pkts = append(r.pkts, bytes.Clone(p))
	r.at = append(r.at, time.Now())
	return len(p), nil
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pkts)
}

// discard is a packetWriter that throws packets away.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// testPath runs a path over w for the duration of a synctest bubble.
func testPath(t testing.TB, w packetWriter, prof Profile, seed uint64) (*path, *counters, *packetPool) {
	pool := newPacketPool()
	c := new(counters)
	p := newPath(w, pool, c, prof, seed, DefaultMaxQueuedPackets)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { p.run(done) })
	t.Cleanup(func() { close(done); wg.Wait() })
	return p, c, pool
}

// send submits a numbered packet of size bytes.
func send(p *path, pool *packetPool, i uint32, size int) {
	pk := pool.get()
	pk.n = size
	clear(pk.buf[:size])
	binary.BigEndian.PutUint32(pk.buf[:], i)
	p.submit(time.Now(), pk)
}

func seqOf(pkt []byte) uint32 { return binary.BigEndian.Uint32(pkt) }

func TestPathDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		p, c, pool := testPath(t, &rec, Profile{Delay: 20 * time.Millisecond}, 1)
		start := time.Now()
		send(p, pool, 0, 100)
		time.Sleep(19 * time.Millisecond)
		synctest.Wait()
		if n := rec.count(); n != 0 {
			t.Fatalf("%d packets out before the delay", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if n := rec.count(); n != 1 {
			t.Fatalf("%d packets out after the delay, want 1", n)
		}
		if d := rec.at[0].Sub(start); d != 20*time.Millisecond {
			t.Errorf("packet left after %s, want 20ms", d)
		}
		if st := c.snapshot(); st.Delivered != 1 || st.DeliveredBytes != 100 {
			t.Errorf("stats %+v", st)
		}
	})
}

func TestPathJitterKeepsOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		prof := Profile{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond}
		p, _, pool := testPath(t, &rec, prof, 7)
		for i := range uint32(500) {
			send(p, pool, i, 60)
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(rec.pkts) != 500 {
			t.Fatalf("%d packets out, want 500", len(rec.pkts))
		}
		for i, pkt := range rec.pkts {
			if seqOf(pkt) != uint32(i) {
				t.Fatalf("packet %d left as number %d: reordered without Reorder", seqOf(pkt), i)
			}
		}
	})
}

func TestPathReorder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		prof := Profile{Delay: 10 * time.Millisecond, Jitter: 5 * time.Millisecond, Reorder: true}
		p, _, pool := testPath(t, &rec, prof, 7)
		for i := range uint32(500) {
			send(p, pool, i, 60)
			time.Sleep(100 * time.Microsecond)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if len(rec.pkts) != 500 {
			t.Fatalf("%d packets out, want 500", len(rec.pkts))
		}
		reordered := 0
		for i, pkt := range rec.pkts {
			if seqOf(pkt) != uint32(i) {
				reordered++
			}
		}
		if reordered == 0 {
			t.Errorf("no packet reordered with Reorder and 5 ms jitter at 0.1 ms spacing")
		}
	})
}

func TestPathLossIsSeeded(t *testing.T) {
	lost := func(seed uint64) uint64 {
		var n uint64
		synctest.Test(t, func(t *testing.T) {
			p, c, pool := testPath(t, discard{}, Profile{Loss: 0.1}, seed)
			for i := range uint32(10000) {
				send(p, pool, i, 60)
			}
			time.Sleep(time.Second)
			synctest.Wait()
			st := c.snapshot()
			if st.LossDropped+st.Delivered != 10000 {
				t.Errorf("lost %d + delivered %d != 10000", st.LossDropped, st.Delivered)
			}
			n = st.LossDropped
		})
		return n
	}
	a, b := lost(3), lost(3)
	if a != b {
		t.Errorf("same seed lost %d then %d packets", a, b)
	}
	if a < 500 || a > 1500 {
		t.Errorf("10%% loss lost %d of 10000 packets", a)
	}
}

func TestPathRateAndQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rec recorder
		// 1 Mbit/s: a 1250-byte packet takes 10 ms; a 50 ms queue holds
		// five packets behind the one on the wire.
		prof := Profile{Rate: 1_000_000, Queue: 50 * time.Millisecond}
		p, c, pool := testPath(t, &rec, prof, 1)
		start := time.Now()
		for i := range uint32(20) {
			send(p, pool, i, 1250)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		st := c.snapshot()
		if st.Delivered != 6 || st.QueueDropped != 14 {
			t.Errorf("delivered %d, queue drops %d; want 6 and 14", st.Delivered, st.QueueDropped)
		}
		for i, at := range rec.at {
			if want := time.Duration(i+1) * 10 * time.Millisecond; at.Sub(start) != want {
				t.Errorf("packet %d left at %s, want %s", i, at.Sub(start), want)
			}
		}
	})
}

func TestPathMaxQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pool := newPacketPool()
		c := new(counters)
		p := newPath(discard{}, pool, c, Profile{Delay: time.Second}, 1, 10)
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() { p.run(done) })
		for i := range uint32(15) {
			send(p, pool, i, 60)
		}
		synctest.Wait()
		close(done)
		wg.Wait()
		if st := c.snapshot(); st.QueueDropped != 5 || st.Delivered != 0 {
			t.Errorf("queue drops %d, delivered %d; want 5 and 0", st.QueueDropped, st.Delivered)
		}
	})
}

// FuzzPath sends arbitrary packets through a shaped path and checks that
// each one either arrives unchanged, in order, or is counted as dropped.
func FuzzPath(f *testing.F) {
	f.Add([]byte{0x45, 0, 0, 20}, uint8(0), uint8(0), uint8(0))
	f.Add(bytes.Repeat([]byte{0x60}, 1500), uint8(10), uint8(30), uint8(3))
	f.Fuzz(func(t *testing.T, data []byte, delayMs, lossPct, split uint8) {
		synctest.Test(t, func(t *testing.T) {
			var rec recorder
			prof := Profile{Delay: time.Duration(delayMs) * time.Millisecond, Loss: float64(lossPct%101) / 100, Rate: 10_000_000}
			p, c, pool := testPath(t, &rec, prof, 1)
			var sent [][]byte
			chunk := int(split)%mtu + 1
			for rest := data; len(rest) > 0 && len(sent) < 64; {
				n := min(chunk, len(rest))
				pk := pool.get()
				pk.n = copy(pk.buf[:], rest[:n])
				sent = append(sent, rest[:n])
				p.submit(time.Now(), pk)
				rest = rest[n:]
			}
			time.Sleep(time.Minute)
			synctest.Wait()
			st := c.snapshot()
			if int(st.Delivered+st.LossDropped+st.QueueDropped) != len(sent) {
				t.Fatalf("sent %d, delivered %d, dropped %d", len(sent), st.Delivered, st.Dropped())
			}
			j := 0
			for _, got := range rec.pkts {
				for j < len(sent) && !bytes.Equal(sent[j], got) {
					j++
				}
				if j == len(sent) {
					t.Fatalf("packet %x arrived changed or out of order", got)
				}
				j++
			}
		})
	})
}

// BenchmarkPath measures the box's per-packet cost in a path, without the
// TUN devices: at lan (forwarded at once) and shaped (through the queue
// and the scheduler).
func BenchmarkPath(b *testing.B) {
	for _, tc := range []struct {
		name string
		prof Profile
	}{
		{"lan", Profile{}},
		{"delay", Profile{Delay: time.Millisecond}},
		{"wifi", Profile{Delay: 10 * time.Millisecond, Jitter: 2 * time.Millisecond, Loss: 0.005}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			pool := newPacketPool()
			c := new(counters)
			p := newPath(discard{}, pool, c, tc.prof, 1, 1<<20)
			done := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() { p.run(done) })
			b.SetBytes(1400)
			b.ReportAllocs()
			for b.Loop() {
				pk := pool.get()
				pk.n = 1400
				p.submit(time.Now(), pk)
			}
			close(done)
			wg.Wait()
		})
	}
}
