//go:build linux

package idlepoll

import (
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
)

func handle(t *testing.T, c net.Conn) *Handle {
	t.Helper()
	rc, err := c.(syscall.Conn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return NewHandle(rc)
}

// expect waits for ready to report v.
func expect(t *testing.T, ready <-chan int, v int, why string) {
	t.Helper()
	select {
	case got := <-ready:
		if got != v {
			t.Fatalf("%s: connection %d came back, want %d", why, got, v)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s: connection %d did not come back", why, v)
	}
}

func TestPoller(t *testing.T) {
	ready := make(chan int, 10)
	p, err := New(func(v int) { ready <- v })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	far := time.Now().Add(time.Hour)

	s1, c1 := loopback.TCPPair(t)
	h1 := handle(t, s1)
	if !p.Park(h1, 1, far) {
		t.Fatal("Park refused")
	}
	select {
	case v := <-ready:
		t.Fatalf("connection %d came back with nothing to read", v)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := c1.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	expect(t, ready, 1, "readable")
	// Parked again with the byte still unread: back at once (level
	// triggered, re-armed).
	if !p.Park(h1, 1, far) {
		t.Fatal("Park refused")
	}
	expect(t, ready, 1, "still readable")
	if _, err := s1.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}

	if !p.Park(h1, 1, time.Now().Add(100*time.Millisecond)) {
		t.Fatal("Park refused")
	}
	expect(t, ready, 1, "deadline")

	if !p.Park(h1, 1, far) {
		t.Fatal("Park refused")
	}
	if p.Len() != 1 {
		t.Errorf("Len = %d, want 1", p.Len())
	}
	p.Wake(h1)
	expect(t, ready, 1, "Wake")
	p.Wake(h1) // not parked: nothing happens

	s2, c2 := loopback.TCPPair(t)
	h2 := handle(t, s2)
	if !p.Park(h2, 2, far) {
		t.Fatal("Park refused")
	}
	c2.Close()
	expect(t, ready, 2, "peer closed")

	if !p.Park(h1, 1, far) {
		t.Fatal("Park refused")
	}
	p.Close()
	expect(t, ready, 1, "Close")
	if p.Park(h1, 1, far) {
		t.Error("Park after Close accepted")
	}
	if p.Len() != 0 {
		t.Errorf("Len = %d after Close, want 0", p.Len())
	}
}

// TestParkClosedSocket: a socket closed before Park is refused, and the
// caller keeps it.
func TestParkClosedSocket(t *testing.T) {
	p, err := New(func(int) { t.Error("a refused connection came back") })
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, _ := loopback.TCPPair(t)
	h := handle(t, s)
	s.Close()
	if p.Park(h, 1, time.Now().Add(time.Hour)) {
		t.Error("Park of a closed socket accepted")
	}
}

// BenchmarkSweep measures the once-a-second walk over parked connections,
// with 100 000 parked and none due.
func BenchmarkSweep(b *testing.B) {
	t := table[int]{ready: func(int) {}, epoch: time.Now(), parked: make(map[uint64]parked[int])}
	far := time.Now().Add(time.Hour)
	for i := range 100_000 {
		t.add(uint64(i+1), i, far)
	}
	now := time.Now()
	for b.Loop() {
		t.expire(now)
	}
}
