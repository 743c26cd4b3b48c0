package geoip

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func loadFixture(tb testing.TB) *Table {
	tb.Helper()
	tab, err := Load("testdata/geoip", "testdata/geoip6")
	if err != nil {
		tb.Fatal(err)
	}
	return tab
}

func TestLookupFixture(t *testing.T) {
	tab := loadFixture(t)
	tests := []struct {
		addr string
		want string // "" = not found
	}{
		// IPv4
		{"0.0.0.0", "AP"},
		{"0.0.0.255", "AP"},
		{"0.0.1.0", ""},
		{"0.255.255.255", ""},
		{"1.0.0.0", "AU"},
		{"1.0.0.255", "AU"},
		{"1.0.1.0", "CN"},
		{"1.0.3.255", "CN"},
		{"1.0.4.0", "AU"},
		{"1.0.7.255", "AU"},
		{"1.0.8.0", ""},
		{"1.0.9.255", ""},
		{"1.0.10.0", ""}, // "??" range
		{"1.0.10.255", ""},
		{"1.0.11.0", ""},
		{"8.8.7.255", ""},
		{"8.8.8.0", "US"},
		{"8.8.8.8", "US"},
		{"8.8.8.255", "US"},
		{"8.8.9.0", "US"},
		{"8.8.9.255", "US"},
		{"8.8.10.0", ""},
		{"10.0.0.0", ""},
		{"10.0.0.1", "EU"},
		{"10.0.0.2", ""},
		{"192.0.2.0", "A1"},
		{"192.0.2.255", "A1"},
		{"192.0.3.0", ""},
		{"255.255.255.254", ""},
		{"255.255.255.255", "A2"},
		// IPv4-mapped IPv6 is looked up as IPv4.
		{"::ffff:8.8.8.8", "US"},
		{"::ffff:192.0.2.1", "A1"},
		{"::ffff:1.0.8.0", ""},
		// IPv6
		{"::", "AP"},
		{"::ff", "AP"},
		{"::100", ""},
		{"::1", "AP"},
		{"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001:db8::", "DE"},
		{"2001:db8::ffff", "DE"},
		{"2001:db8::1:0", "FR"},
		{"2001:db8::ffff:ffff:ffff:ffff", "FR"},
		{"2001:db8:0:1::", ""},
		{"2001:db8:1::", ""}, // "??" range
		{"2001:db8:1:ffff:ffff:ffff:ffff:ffff", ""},
		{"2001:db8:2::ffff:ffff:ffff:ffef", ""},
		{"2001:db8:2::ffff:ffff:ffff:fff0", "SE"},
		{"2001:db8:2::ffff:ffff:ffff:ffff", "SE"},
		{"2001:db8:2:1::", "NO"},
		{"2001:db8:2:1::ff", "NO"},
		{"2001:db8:2:1::100", ""},
		{"2001:4860:4860::8887", ""},
		{"2001:4860:4860::8888", "US"},
		{"2001:4860:4860::8888%eth0", "US"}, // zone ignored
		{"2001:4860:4860::8889", ""},
		{"2a00:1450::", "IE"},
		{"2a00:1450:ffff:ffff:ffff:ffff:ffff:ffff", "IE"},
		{"2a00:1451::", ""},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:feff", ""},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ff00", "JP"},
		{"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "JP"},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			got, ok := tab.Lookup(netip.MustParseAddr(tt.addr))
			if got != tt.want || ok != (tt.want != "") {
				t.Errorf("Lookup(%s) = %q, %v; want %q, %v", tt.addr, got, ok, tt.want, tt.want != "")
			}
		})
	}
	t.Run("invalid", func(t *testing.T) {
		if got, ok := tab.Lookup(netip.Addr{}); ok || got != "" {
			t.Errorf("Lookup(zero Addr) = %q, %v; want \"\", false", got, ok)
		}
	})
	t.Run("nil table", func(t *testing.T) {
		var nilTab *Table
		if got, ok := nilTab.Lookup(netip.MustParseAddr("8.8.8.8")); ok || got != "" {
			t.Errorf("nil Table Lookup = %q, %v", got, ok)
		}
		if v4, v6 := nilTab.Len(); v4 != 0 || v6 != 0 {
			t.Errorf("nil Table Len = %d, %d", v4, v6)
		}
	})
}

func TestLenAndCompaction(t *testing.T) {
	tab := loadFixture(t)
	// 10 IPv4 lines and 9 IPv6 lines, one "??" each.
	if v4, v6 := tab.Len(); v4 != 9 || v6 != 8 {
		t.Errorf("Len() = %d, %d; want 9, 8", v4, v6)
	}
	// The two adjacent US ranges are one run.
	us := 0
	for _, c := range tab.v4Country {
		if tab.names[c] == "US" {
			us++
		}
	}
	if us != 1 {
		t.Errorf("IPv4 US runs = %d; want 1 (adjacent ranges merged)", us)
	}
	for i := 1; i < len(tab.v4Country); i++ {
		if tab.v4Country[i] == tab.v4Country[i-1] || tab.v4Starts[i] <= tab.v4Starts[i-1] {
			t.Errorf("IPv4 runs %d and %d not compact or not sorted", i-1, i)
		}
	}
	for i := 1; i < len(tab.v6Country); i++ {
		if tab.v6Country[i] == tab.v6Country[i-1] || !tab.v6Starts[i-1].less(tab.v6Starts[i]) {
			t.Errorf("IPv6 runs %d and %d not compact or not sorted", i-1, i)
		}
	}
}

func TestFixtureMatchesRanges(t *testing.T) {
	for _, files := range [][2]string{
		{"testdata/geoip", "testdata/geoip6"},
		{"testdata/unsorted_geoip", "testdata/unsorted_geoip6"},
	} {
		t.Run(files[0], func(t *testing.T) {
			v4, err := os.Open(files[0])
			if err != nil {
				t.Fatal(err)
			}
			defer v4.Close()
			v6, err := os.Open(files[1])
			if err != nil {
				t.Fatal(err)
			}
			defer v6.Close()
			p, tab, err := parseRaw(v4, v6)
			if err != nil {
				t.Fatal(err)
			}
			checkAgainstRanges(t, p, tab)
		})
	}
}

func TestUnsortedFileSameTable(t *testing.T) {
	sorted := loadFixture(t)
	unsorted, err := Load("testdata/unsorted_geoip", "testdata/unsorted_geoip6")
	if err != nil {
		t.Fatal(err)
	}
	// Interned indexes differ with first-seen order; compare by name.
	same := func(aStarts, bStarts int, a, b []uint16) bool {
		if aStarts != bStarts || len(a) != len(b) {
			return false
		}
		for i := range a {
			if sorted.names[a[i]] != unsorted.names[b[i]] {
				return false
			}
		}
		return true
	}
	if !same(len(sorted.v4Starts), len(unsorted.v4Starts), sorted.v4Country, unsorted.v4Country) ||
		!same(len(sorted.v6Starts), len(unsorted.v6Starts), sorted.v6Country, unsorted.v6Country) {
		t.Fatal("unsorted fixture gives a different table")
	}
	for i := range sorted.v4Starts {
		if sorted.v4Starts[i] != unsorted.v4Starts[i] {
			t.Fatalf("v4 run %d starts differ", i)
		}
	}
	for i := range sorted.v6Starts {
		if sorted.v6Starts[i] != unsorted.v6Starts[i] {
			t.Fatalf("v6 run %d starts differ", i)
		}
	}
}

func TestOneFamily(t *testing.T) {
	v4only, err := Load("testdata/geoip", "")
	if err != nil {
		t.Fatal(err)
	}
	v6only, err := Load("", "testdata/geoip6")
	if err != nil {
		t.Fatal(err)
	}
	v4 := netip.MustParseAddr("8.8.8.8")
	v6 := netip.MustParseAddr("2001:4860:4860::8888")
	if c, ok := v4only.Lookup(v4); !ok || c != "US" {
		t.Errorf("v4-only table: Lookup(%v) = %q, %v", v4, c, ok)
	}
	if c, ok := v4only.Lookup(v6); ok {
		t.Errorf("v4-only table: Lookup(%v) = %q, true", v6, c)
	}
	if c, ok := v6only.Lookup(v6); !ok || c != "US" {
		t.Errorf("v6-only table: Lookup(%v) = %q, %v", v6, c, ok)
	}
	if c, ok := v6only.Lookup(v4); ok {
		t.Errorf("v6-only table: Lookup(%v) = %q, true", v4, c)
	}
	if n4, n6 := v4only.Len(); n4 != 9 || n6 != 0 {
		t.Errorf("v4-only Len = %d, %d", n4, n6)
	}
}

// TestRandomRangesMatch builds random tables (adjacent runs, gaps, "??",
// ranges at both ends of the space) and checks every boundary.
func TestRandomRangesMatch(t *testing.T) {
	codes := []string{"US", "DE", "??", "A1", "FR"}
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			var v4, v6 strings.Builder
			var a4 uint64
			var a6 uint128
			if rng.IntN(2) == 0 {
				a4, a6 = 1, uint128{lo: 1}
			}
			for range 200 {
				n := uint64(rng.IntN(3)) * uint64(rng.IntN(1000)) // 0 = adjacent
				lo := a4 + n
				hi := lo + uint64(rng.IntN(1000))
				if hi > 0xffffffff || rng.IntN(150) == 0 {
					hi = 0xffffffff
				}
				if lo > hi {
					break
				}
				fmt.Fprintf(&v4, "%d,%d,%s\n", lo, hi, codes[rng.IntN(len(codes))])
				if hi == 0xffffffff {
					break
				}
				a4 = hi + 1
			}
			for range 200 {
				lo := a6
				for range rng.IntN(3) * rng.IntN(1000) {
					lo = lo.next()
				}
				hi := lo
				// Cross the 64-bit carry now and then.
				if rng.IntN(5) == 0 {
					hi = uint128{lo.hi, ^uint64(0) - uint64(rng.IntN(3))}
					if hi.less(lo) {
						hi = lo
					}
				}
				for range rng.IntN(100) {
					hi = hi.next()
				}
				fmt.Fprintf(&v6, "%s,%s,%s\n", addrOf(lo, true), addrOf(hi, true), codes[rng.IntN(len(codes))])
				a6 = hi.next()
				if rng.IntN(10) == 0 {
					a6.hi += uint64(rng.IntN(3))
				}
			}
			fmt.Fprintf(&v6, "ffff::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,JP\n")
			p, tab, err := parseRaw(strings.NewReader(v4.String()), strings.NewReader(v6.String()))
			if err != nil {
				t.Fatalf("%v\n%s\n%s", err, v4.String(), v6.String())
			}
			checkAgainstRanges(t, p, tab)
		})
	}
}

func TestLookupDoesNotAllocate(t *testing.T) {
	tab := loadFixture(t)
	db, err := Open("testdata/geoip", "testdata/geoip6")
	if err != nil {
		t.Fatal(err)
	}
	addrs := []netip.Addr{
		netip.MustParseAddr("8.8.8.8"),
		netip.MustParseAddr("2001:4860:4860::8888"),
		netip.MustParseAddr("::ffff:8.8.8.8"),
		netip.MustParseAddr("1.0.8.0"),
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, a := range addrs {
			tab.Lookup(a)
			db.Lookup(a)
		}
	})
	if allocs != 0 {
		t.Errorf("Lookup allocates %v times per run; want 0", allocs)
	}
}
