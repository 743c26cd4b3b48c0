package geoip

import (
	"encoding/binary"
	"io"
	"net/netip"
	"testing"
)

// parseRaw parses like Parse but also returns the parser, whose v4 and v6
// fields hold the validated ranges the Table was built from.
func parseRaw(v4, v6 io.Reader) (*parser, *Table, error) {
	p := newParser()
	if v4 != nil {
		if err := p.parse(v4, "ipv4", false); err != nil {
			return nil, nil, err
		}
	}
	if v6 != nil {
		if err := p.parse(v6, "ipv6", true); err != nil {
			return nil, nil, err
		}
	}
	return p, p.table(), nil
}

func addrOf(a uint128, v6 bool) netip.Addr {
	if !v6 {
		return netip.AddrFrom4([4]byte{byte(a.lo >> 24), byte(a.lo >> 16), byte(a.lo >> 8), byte(a.lo)})
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], a.hi)
	binary.BigEndian.PutUint64(b[8:], a.lo)
	return netip.AddrFrom16(b)
}

func (a uint128) prev() uint128 {
	if a.lo == 0 {
		a.hi--
	}
	a.lo--
	return a
}

// mid returns (a+b)/2 for a <= b.
func mid(a, b uint128) uint128 {
	// (a+b)/2 = a + (b-a)/2, computed in 128 bits.
	dlo := b.lo - a.lo
	dhi := b.hi - a.hi
	if b.lo < a.lo {
		dhi--
	}
	half := uint128{dhi >> 1, dlo>>1 | dhi<<63}
	r := uint128{a.hi + half.hi, a.lo + half.lo}
	if r.lo < a.lo {
		r.hi++
	}
	return r
}

// checkAgainstRanges checks every range's first, middle and last address
// and the addresses just outside it against the parsed ranges: the compact
// table must answer exactly what the file says.
func checkAgainstRanges(tb testing.TB, p *parser, tab *Table) {
	tb.Helper()
	for _, fam := range []struct {
		ranges []rawRange
		v6     bool
		top    uint128
	}{
		{p.v4, false, uint128{lo: 0xffffffff}},
		{p.v6, true, uint128{^uint64(0), ^uint64(0)}},
	} {
		want := func(idx uint16) (string, bool) {
			if idx == unknownIdx {
				return "", false
			}
			return p.names[idx], true
		}
		check := func(a uint128, wantIdx uint16, what string, line int32) {
			addr := addrOf(a, fam.v6)
			if fam.v6 && addr.Is4In6() {
				return // looked up in the IPv4 table by design
			}
			gotC, gotOK := tab.Lookup(addr)
			wantC, wantOK := want(wantIdx)
			if gotC != wantC || gotOK != wantOK {
				tb.Fatalf("line %d: Lookup(%v) (%s) = %q, %v; want %q, %v", line, addr, what, gotC, gotOK, wantC, wantOK)
			}
		}
		for i, rr := range fam.ranges {
			check(rr.lo, rr.country, "first", rr.line)
			check(rr.hi, rr.country, "last", rr.line)
			check(mid(rr.lo, rr.hi), rr.country, "middle", rr.line)
			if rr.lo != (uint128{}) {
				outside := uint16(unknownIdx)
				if i > 0 && fam.ranges[i-1].hi == rr.lo.prev() {
					outside = fam.ranges[i-1].country
				}
				check(rr.lo.prev(), outside, "before", rr.line)
			}
			if rr.hi != fam.top {
				outside := uint16(unknownIdx)
				if i+1 < len(fam.ranges) && fam.ranges[i+1].lo == rr.hi.next() {
					outside = fam.ranges[i+1].country
				}
				check(rr.hi.next(), outside, "after", rr.line)
			}
		}
	}
}
