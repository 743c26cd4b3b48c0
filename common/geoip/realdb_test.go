package geoip

import (
	"net/netip"
	"os"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// Debian's tor-geoipdb files; CI installs the package.
const (
	realV4 = "/usr/share/tor/geoip"
	realV6 = "/usr/share/tor/geoip6"
)

func skipWithoutRealDB(tb testing.TB) {
	tb.Helper()
	for _, path := range []string{realV4, realV6} {
		if _, err := os.Stat(path); err != nil {
			testenv.Missing(tb, "tor's geoip database is not installed (apt-get install tor-geoipdb; CI installs it): %v", err)
		}
	}
}

func validCode(c string) bool {
	if len(c) != 2 {
		return false
	}
	for i := range 2 {
		if (c[i] < 'A' || c[i] > 'Z') && (c[i] < '0' || c[i] > '9') {
			return false
		}
	}
	return true
}

// tableBytes is the size of the table's slices.
func tableBytes(t *Table) int {
	n := 4*len(t.v4Starts) + 2*len(t.v4Country) + 16*len(t.v6Starts) + 2*len(t.v6Country)
	for _, name := range t.names {
		n += 16 + len(name)
	}
	return n
}

// TestRealDatabase loads Debian's database once (it is large, and slow to
// parse under -race) and checks it loosely, then checks every range of the
// files against the compact table.
func TestRealDatabase(t *testing.T) {
	skipWithoutRealDB(t)
	v4, err := os.Open(realV4)
	if err != nil {
		t.Fatal(err)
	}
	defer v4.Close()
	v6, err := os.Open(realV6)
	if err != nil {
		t.Fatal(err)
	}
	defer v6.Close()
	start := time.Now()
	p, tab, err := parseRaw(v4, v6)
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	n4, n6 := tab.Len()
	t.Logf("loaded %d IPv4 and %d IPv6 ranges in %v: %d and %d runs after merging, %.1f MiB of tables",
		n4, n6, elapsed, len(tab.v4Starts), len(tab.v6Starts), float64(tableBytes(tab))/(1<<20))

	// Loose checks only: allocations move between countries over time.
	if n4 < 100000 || n6 < 50000 {
		t.Errorf("Len() = %d, %d; want > 100000 IPv4 and > 50000 IPv6 ranges", n4, n6)
	}
	for _, s := range []string{"8.8.8.8", "1.1.1.1", "2001:4860:4860::8888", "2606:4700:4700::1111"} {
		addr := netip.MustParseAddr(s)
		c, ok := tab.Lookup(addr)
		if !ok || !validCode(c) {
			t.Errorf("Lookup(%s) = %q, %v; want a country code", s, c, ok)
		}
		if addr.Is4() {
			if m, _ := tab.Lookup(netip.AddrFrom16(addr.As16())); m != c {
				t.Errorf("Lookup(::ffff:%s) = %q; want %q as for the IPv4 address", s, m, c)
			}
		}
	}
	for _, s := range []string{"127.0.0.1", "10.1.2.3", "192.168.1.1", "::1", "fe80::1"} {
		if c, ok := tab.Lookup(netip.MustParseAddr(s)); ok {
			t.Errorf("Lookup(%s) = %q; want no country for a private address", s, c)
		}
	}
	checkAgainstRanges(t, p, tab)
}
