package geoip

import (
	"encoding/binary"
	"net/netip"
)

// Unknown is the country [DB.Lookup] returns when an address is in no
// range, in a "??" range, or when no table is loaded.
const Unknown = "??"

// unknownIdx is the country index of addresses with no known country.
const unknownIdx = 0

// Table maps IPv4 and IPv6 addresses to country codes. It is immutable and
// safe for concurrent use. Build one with [Load] or [Parse].
type Table struct {
	// v4Starts[i] is the first address of a run of addresses whose country
	// is names[v4Country[i]]; the run ends where v4Starts[i+1] begins, the
	// last one at 255.255.255.255. v4Starts[0] is 0 when the family is
	// loaded; both slices are empty otherwise.
	v4Starts  []uint32
	v4Country []uint16
	// v6Starts and v6Country are the same for IPv6.
	v6Starts  []uint128
	v6Country []uint16
	// names holds the interned country codes; names[unknownIdx] is "".
	names []string
	// n4 and n6 count the ranges with a known country read from the files.
	n4, n6 int
}

// uint128 is an IPv6 address as a big-endian pair of uint64.
type uint128 struct{ hi, lo uint64 }

func (a uint128) less(b uint128) bool {
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo)
}

// next returns a+1 (wrapping at the top).
func (a uint128) next() uint128 {
	a.lo++
	if a.lo == 0 {
		a.hi++
	}
	return a
}

func uint128From(addr netip.Addr) uint128 {
	b := addr.As16()
	return uint128{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

// Lookup returns the country code of addr: two characters from [A-Z0-9].
// ok is false when addr is invalid, lies in no range or in a "??" range, or
// its family was not loaded. IPv4-mapped IPv6 addresses are looked up as
// IPv4; a zone is ignored. Lookup does not allocate.
func (t *Table) Lookup(addr netip.Addr) (country string, ok bool) {
	if t == nil || !addr.IsValid() {
		return "", false
	}
	addr = addr.Unmap()
	var idx uint16
	if addr.Is4() {
		b := addr.As4()
		idx = lookup4(t.v4Starts, t.v4Country, binary.BigEndian.Uint32(b[:]))
	} else {
		idx = lookup6(t.v6Starts, t.v6Country, uint128From(addr))
	}
	if idx == unknownIdx {
		return "", false
	}
	return t.names[idx], true
}

// lookup4 returns the country index of the last run starting at or before a.
func lookup4(starts []uint32, country []uint16, a uint32) uint16 {
	// Invariant: starts[i] <= a for i < lo, starts[i] > a for i >= hi.
	lo, hi := 0, len(starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if starts[m] <= a {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return unknownIdx
	}
	return country[lo-1]
}

// lookup6 is lookup4 for IPv6.
func lookup6(starts []uint128, country []uint16, a uint128) uint16 {
	lo, hi := 0, len(starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if !a.less(starts[m]) {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return unknownIdx
	}
	return country[lo-1]
}

// Len returns the number of ranges with a known country that were read
// for each family ("??" ranges are not counted; adjacent ranges are counted
// separately even though they are stored merged).
func (t *Table) Len() (v4, v6 int) {
	if t == nil {
		return 0, 0
	}
	return t.n4, t.n6
}
