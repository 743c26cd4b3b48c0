package pacing

import (
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// sink is a PacketConn that accepts every datagram and counts them.
type sink struct {
	net.PacketConn // nil: only WriteTo is used
	mu             sync.Mutex
	n              int
}

func (s *sink) WriteTo(p []byte, _ net.Addr) (int, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	return len(p), nil
}

var (
	paced   = netip.MustParseAddrPort("192.0.2.1:1000")
	unpaced = netip.MustParseAddrPort("192.0.2.2:1000")
)

// send writes n datagrams of size bytes to dst through c.
func send(t *testing.T, c net.PacketConn, dst netip.AddrPort, n, size int) {
	t.Helper()
	p := make([]byte, size)
	for range n {
		if _, err := c.WriteTo(p, net.UDPAddrFromAddrPort(dst)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPacerSpaces: datagrams to a paced destination leave no faster than
// its rate (beyond one burst); those to other destinations wait for
// nothing.
func TestPacerSpaces(t *testing.T) {
	r := NewRegistry()
	c := r.PacketConn(&sink{})
	p := r.Pace(paced)
	defer p.Close()
	p.SetRate(100e3)

	start := time.Now()
	send(t, c, paced, 30, 1000) // 30 kB at 100 kB/s
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("30 kB at 100 kB/s left in %v, want about 300 ms", d)
	}

	// At this rate, 200 kB would take 2 s paced.
	start = time.Now()
	send(t, c, unpaced, 200, 1000)
	if d := time.Since(start); d > time.Second {
		t.Errorf("200 kB to an unpaced destination took %v", d)
	}
}

// TestPacerRates: zero, or MaxRate and above, paces nothing; slower than
// MinRate is MinRate; Held and Next report what the Pacer holds back.
func TestPacerRates(t *testing.T) {
	r := NewRegistry()
	p := r.Pace(paced)
	defer p.Close()
	now := time.Now()
	for _, rate := range []float64{0, MaxRate, 2 * MaxRate} {
		p.SetRate(rate)
		for range 100 {
			p.wait(1200)
		}
		if h := p.Held(time.Now()); h != 0 {
			t.Errorf("rate %v: %d bytes held, want none", rate, h)
		}
	}
	p.SetRate(1)
	p.mu.Lock()
	if p.rate != MinRate {
		t.Errorf("rate 1 B/s paces at %v, want MinRate", p.rate)
	}
	p.next = now.Add(Burst + time.Second) // a second's backlog
	p.mu.Unlock()
	if h := p.Held(now); h != uint64(MinRate) {
		t.Errorf("Held = %d after a second's backlog at MinRate, want %d", h, uint64(MinRate))
	}
	if next := p.Next(now); !next.Equal(now.Add(time.Second)) {
		t.Errorf("Next = %v, want a second later", next.Sub(now))
	}
}

// TestPacerClose: Close lets the datagrams that wait leave at once and
// unregisters the Pacer.
func TestPacerClose(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := NewRegistry()
	c := r.PacketConn(&sink{})
	p := r.Pace(paced)
	p.SetRate(MinRate) // 100 datagrams of 1 200 bytes: 7.5 s
	done := make(chan struct{})
	go func() {
		defer close(done)
		send(t, c, paced, 100, 1200)
	}()
	time.Sleep(50 * time.Millisecond)
	p.Close()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("datagrams still held 5 s after Close")
	}
	if r.lookup(paced) != nil || r.active.Load() != 0 {
		t.Error("the Pacer is still registered after Close")
	}
	p.Close() // idempotent
}
