package ratelimit

import (
	"net/netip"
	"testing"
	"time"
)

// fakeClock is a manually advanced clock.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestBucket(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := New(Config{Rate: 1, Burst: 3, Now: clk.now})
	a := netip.MustParseAddr("192.0.2.1")
	b := netip.MustParseAddr("192.0.2.2")
	for i := range 3 {
		if !l.Allow(a) {
			t.Fatalf("request %d of the burst refused", i)
		}
	}
	if l.Allow(a) {
		t.Fatal("request beyond the burst allowed")
	}
	if !l.Allow(b) {
		t.Fatal("another address was limited")
	}
	clk.t = clk.t.Add(time.Second)
	if !l.Allow(a) {
		t.Fatal("refilled token refused")
	}
	if l.Allow(a) {
		t.Fatal("second request after one second allowed")
	}
}

func TestIPv6Prefix(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := New(Config{Rate: 1, Burst: 1, Now: clk.now})
	if !l.Allow(netip.MustParseAddr("2001:db8:1:2::1")) {
		t.Fatal("first request refused")
	}
	if l.Allow(netip.MustParseAddr("2001:db8:1:2:ffff::9")) {
		t.Fatal("same /64 not limited together")
	}
	if !l.Allow(netip.MustParseAddr("2001:db8:1:3::1")) {
		t.Fatal("another /64 limited")
	}
	// IPv4-mapped IPv6 is the IPv4 address.
	if !l.Allow(netip.MustParseAddr("192.0.2.7")) || l.Allow(netip.MustParseAddr("::ffff:192.0.2.7")) {
		t.Fatal("IPv4-mapped address not limited with its IPv4 form")
	}
}

func TestDisabled(t *testing.T) {
	var off *Limiter
	if !off.Allow(netip.Addr{}) || off.Enabled() {
		t.Fatal("nil limiter limits")
	}
	zero := New(Config{})
	for range 100 {
		if !zero.Allow(netip.MustParseAddr("192.0.2.1")) {
			t.Fatal("zero config limits")
		}
	}
}

func TestBoundedLRU(t *testing.T) {
	clk := &fakeClock{t: time.Unix(1000, 0)}
	l := New(Config{Rate: 1, Burst: 1, MaxEntries: 3, Now: clk.now})
	addr := func(i byte) netip.Addr { return netip.AddrFrom4([4]byte{192, 0, 2, i}) }
	for i := range byte(3) {
		l.Allow(addr(i))
	}
	l.Allow(addr(0)) // refresh 0: now 1 is the oldest (and 0 is limited)
	if l.Allow(addr(0)) {
		t.Fatal("address 0 not limited")
	}
	l.Allow(addr(9)) // evicts 1
	if l.Len() != 3 {
		t.Fatalf("Len = %d, want 3", l.Len())
	}
	if l.Allow(addr(0)) {
		t.Fatal("address 0 was evicted instead of the oldest")
	}
	if !l.Allow(addr(1)) {
		t.Fatal("evicted address 1 did not start with a full bucket")
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(Config{Rate: 1e9, Burst: 1 << 30, MaxEntries: 1024})
	addrs := make([]netip.Addr, 4096)
	for i := range addrs {
		addrs[i] = netip.AddrFrom4([4]byte{10, 0, byte(i >> 8), byte(i)})
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		l.Allow(addrs[i%len(addrs)])
	}
}
