package geoip

import (
	"bytes"
	"errors"
	"net/netip"
	"os"
	"testing"
)

// FuzzParse feeds arbitrary IPv4 and IPv6 files to the parser. It must never
// panic; a file it accepts must give a table that answers exactly what the
// file says, and a file it rejects must give a sentinel error.
func FuzzParse(f *testing.F) {
	for _, pair := range [][2]string{
		{"testdata/geoip", "testdata/geoip6"},
		{"testdata/unsorted_geoip", "testdata/unsorted_geoip6"},
		{"testdata/bad/overlap_geoip", "testdata/bad/badcc_geoip6"},
		{"testdata/bad/quoted_geoip", "testdata/bad/v4_in_v6_geoip6"},
		{"testdata/bad/reversed_geoip", "testdata/geoip6"},
	} {
		v4, err := os.ReadFile(pair[0])
		if err != nil {
			f.Fatal(err)
		}
		v6, err := os.ReadFile(pair[1])
		if err != nil {
			f.Fatal(err)
		}
		f.Add(v4, v6)
	}
	f.Add([]byte("0,4294967295,US\n"), []byte("::,ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff,DE\n"))
	f.Add([]byte("5,9,??\n1,4,A1\n10,10,A1\n"), []byte("::ffff:0:0,::ffff:ffff:ffff,US\n"))
	f.Add([]byte(""), []byte("# only a comment\n"))
	sentinels := []error{ErrEmpty, ErrTooLarge, ErrLineTooLong, ErrSyntax, ErrBadAddress, ErrBadCountry, ErrRange, ErrOverlap}
	f.Fuzz(func(t *testing.T, v4, v6 []byte) {
		p, tab, err := parseRaw(bytes.NewReader(v4), bytes.NewReader(v6))
		if err != nil {
			for _, s := range sentinels {
				if errors.Is(err, s) {
					return
				}
			}
			t.Fatalf("error %v wraps no sentinel", err)
		}
		checkAgainstRanges(t, p, tab)
		// Whatever the input, a found country is two [A-Z0-9] characters.
		for _, b := range [][]byte{v4, v6} {
			var a16 [16]byte
			copy(a16[:], b)
			for _, addr := range []netip.Addr{netip.AddrFrom16(a16), netip.AddrFrom16(a16).Unmap(), netip.AddrFrom4([4]byte(a16[:4]))} {
				if c, ok := tab.Lookup(addr); ok && !validCode(c) {
					t.Fatalf("Lookup(%v) = %q", addr, c)
				}
			}
		}
		// Parse gives the same verdict.
		if _, err := parseReaders(bytes.NewReader(v4), bytes.NewReader(v6)); err != nil {
			t.Fatalf("parseRaw accepted, Parse = %v", err)
		}
	})
}
