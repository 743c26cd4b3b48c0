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
