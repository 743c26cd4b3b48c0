package peerlimit

import (
	"net/netip"
	"testing"
)

func TestKey(t *testing.T) {
	tests := []struct{ in, want string }{
		{"192.0.2.7", "192.0.2.7"},
		{"::ffff:192.0.2.7", "192.0.2.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::"},
		{"2001:db8:1:2::ffff", "2001:db8:1:2::"},
		{"fe80::1%eth0", "fe80::"},
	}
	for _, tt := range tests {
		if got := Key(netip.MustParseAddr(tt.in)); got.String() != tt.want {
			t.Errorf("Key(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestCounter(t *testing.T) {
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	c := New(2)
	for range 2 {
		if !c.Acquire(a) {
			t.Fatal("refused below the maximum")
		}
	}
	if c.Acquire(a) {
		t.Error("a third acquired")
	}
	if !c.Acquire(b) {
		t.Error("another key refused")
	}
	c.Release(a)
	if !c.Acquire(a) {
		t.Error("refused after a release")
	}
	c.Release(a)
	c.Release(a)
	c.Release(b)
	if len(c.held) != 0 {
		t.Errorf("%d keys held after every release", len(c.held))
	}
	unlimited := New(0)
	for range 1000 {
		if !unlimited.Acquire(a) {
			t.Fatal("New(0) refused")
		}
	}
	if unlimited.held[a] != 1000 {
		t.Errorf("held %d, want 1000", unlimited.held[a])
	}
}

// TestCounterPressure: a few keys that hold many take no more once the
// pressure mark is reached, while keys holding few still get theirs.
func TestCounterPressure(t *testing.T) {
	flood := []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")}
	c := NewShared(100, 40)
	held := 0
	for _, a := range flood {
		for c.Acquire(a) {
			held++
		}
	}
	// The first key takes 40, up to the pressure mark; the second then
	// only its fair share, 40/2.
	if held != 60 {
		t.Fatalf("the flood holds %d, want 60 (the pressure mark and one share)", held)
	}
	var honests []netip.Addr
	for i := range 30 {
		honest := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		honests = append(honests, honest)
		if !c.Acquire(honest) {
			t.Fatalf("honest key %d refused its first connection under pressure", i)
		}
		if i > 0 && c.Acquire(honest) {
			// 40 / (2 + i + 1) rounds down to 1 from the 12th key on;
			// below it the share is larger.
			if 40/(2+i+1) <= 1 {
				t.Fatalf("honest key %d took a second connection beyond its share", i)
			}
			c.Release(honest)
		}
	}
	for _, a := range flood {
		if c.Acquire(a) {
			t.Fatal("a flood key took more under pressure")
		}
	}
	// Below the mark again, the per-key maximum is the only limit.
	for range 40 {
		c.Release(flood[0])
	}
	for _, h := range honests {
		c.Release(h)
	}
	if !c.Acquire(flood[1]) {
		t.Error("refused below the pressure mark")
	}
}
