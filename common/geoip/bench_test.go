package geoip

import (
	"fmt"
	"net/netip"
	"runtime"
	"strings"
	"testing"
)

// syntheticTable builds a table the size of Debian's (390k IPv4 and 300k
// IPv6 runs) so that the Lookup benchmarks run without the real files.
func syntheticTable(tb testing.TB) *Table {
	tb.Helper()
	codes := []string{"US", "DE", "FR", "GB", "NL", "??", "CN", "BR"}
	var v4, v6 strings.Builder
	for i := range 390000 {
		lo := uint32(i) * 11000
		fmt.Fprintf(&v4, "%d,%d,%s\n", lo, lo+9999, codes[i%len(codes)])
	}
	for i := range 300000 {
		fmt.Fprintf(&v6, "2%03x:%x::,2%03x:%x:ffff:ffff:ffff:ffff:ffff:ffff,%s\n",
			i>>16, i&0xffff, i>>16, i&0xffff, codes[i%len(codes)])
	}
	tab, err := parseReaders(strings.NewReader(v4.String()), strings.NewReader(v6.String()))
	if err != nil {
		tb.Fatal(err)
	}
	return tab
}

func benchLookup(b *testing.B, tab *Table, addrs []netip.Addr) {
	b.ReportAllocs()
	found := 0
	for i := 0; b.Loop(); i++ {
		if _, ok := tab.Lookup(addrs[i%len(addrs)]); ok {
			found++
		}
	}
	if found == 0 && b.N > len(addrs) {
		b.Fatal("no address found")
	}
}

// spread returns n addresses spread over the populated part of the space.
func spread(n int, v6 bool) []netip.Addr {
	addrs := make([]netip.Addr, n)
	for i := range addrs {
		x := uint32(i) * 2654435761 // Knuth's multiplicative hash
		if v6 {
			addrs[i] = netip.AddrFrom16([16]byte{0x20, byte(x >> 24 & 0x0f), byte(x >> 16), byte(x >> 8), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(x)})
		} else {
			addrs[i] = netip.AddrFrom4([4]byte{byte(x >> 24), byte(x >> 16), byte(x >> 8), byte(x)})
		}
	}
	return addrs
}

func BenchmarkLookup(b *testing.B) {
	synthetic := syntheticTable(b)
	v4, v6 := spread(1<<16, false), spread(1<<16, true)
	mapped := make([]netip.Addr, len(v4))
	for i, a := range v4 {
		mapped[i] = netip.AddrFrom16(a.As16())
	}
	b.Run("synthetic/v4", func(b *testing.B) { benchLookup(b, synthetic, v4) })
	b.Run("synthetic/v6", func(b *testing.B) { benchLookup(b, synthetic, v6) })
	b.Run("synthetic/v4-mapped", func(b *testing.B) { benchLookup(b, synthetic, mapped) })
	b.Run("real", func(b *testing.B) {
		skipWithoutRealDB(b)
		real, err := Load(realV4, realV6)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("v4", func(b *testing.B) { benchLookup(b, real, v4) })
		b.Run("v6", func(b *testing.B) { benchLookup(b, real, v6) })
	})
}

func BenchmarkDBLookup(b *testing.B) {
	db, err := Open("testdata/geoip", "testdata/geoip6")
	if err != nil {
		b.Fatal(err)
	}
	addr := netip.MustParseAddr("8.8.8.8")
	b.ReportAllocs()
	for b.Loop() {
		if db.Lookup(addr) != "US" {
			b.Fatal("wrong country")
		}
	}
}

func BenchmarkLoadReal(b *testing.B) {
	skipWithoutRealDB(b)
	b.Run("v4", func(b *testing.B) { benchLoad(b, realV4, "") })
	b.Run("v6", func(b *testing.B) { benchLoad(b, "", realV6) })
	b.Run("both", func(b *testing.B) { benchLoad(b, realV4, realV6) })
}

// benchLoad also reports the live heap the loaded table holds (live-B).
func benchLoad(b *testing.B, v4, v6 string) {
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var tab *Table
	for b.Loop() {
		var err error
		if tab, err = Load(v4, v6); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)), "live-B")
	runtime.KeepAlive(tab)
}
