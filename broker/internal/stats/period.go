package stats

import (
	"hash/maphash"
	"net/netip"
)

// period holds the counts of one descriptor period; EndPeriod replaces it
// with a fresh one.
//
// Unique proxy addresses are never stored: seen is keyed by a keyed hash of
// the address whose random key (seed) is drawn anew for every period and
// dropped with it, so the set cannot be matched against addresses after the
// period ends, and nothing of it is ever written out.
type period struct {
	seed maphash.Seed
	// seen maps the keyed hash of a proxy address to the set of (type, NAT)
	// pairs it polled with this period: bit t*numNATs+n.
	seen map[uint64]uint32

	proxyCountries map[string]uint64 // unique proxy addresses per country
	ipsTotal       uint64
	ipsByType      [numTypes]uint64
	ipsByNAT       [numNATs]uint64

	idle, withRelay, withoutRelay, rejectedRelay uint64

	denied, restrictedDenied, unrestrictedDenied, matched, timeout uint64

	methodPolls     [numDescriptorMethods]uint64
	methodCountries [numDescriptorMethods]map[string]uint64 // polls per country
}

func newPeriod() period {
	p := period{
		seed:           maphash.MakeSeed(),
		seen:           make(map[uint64]uint32),
		proxyCountries: make(map[string]uint64),
	}
	for i := range p.methodCountries {
		p.methodCountries[i] = make(map[string]uint64)
	}
	return p
}

// hash returns the period's keyed hash of addr (IPv4-mapped IPv6 addresses
// hash as their IPv4 address; zones are ignored).
func (p *period) hash(addr netip.Addr) uint64 {
	b := addr.Unmap().As16()
	return maphash.Bytes(p.seed, b[:])
}

func (p *period) countRelayPattern(present bool) {
	if present {
		p.withRelay++
	} else {
		p.withoutRelay++
	}
}

type addResult uint8

const (
	addedSeen      addResult = iota // address already seen with this type and NAT
	addedNew                        // a new (address, type, NAT) combination
	addedUntracked                  // a new address, but the set is full
)

// comboBit is the bit of (t, n) in a seen mask.
func comboBit(t typeIdx, n natIdx) uint32 { return 1 << (uint(t)*numNATs + uint(n)) }

// typeMask has the bits of every NAT for type t.
func typeMask(t typeIdx) uint32 { return (1<<numNATs - 1) << (uint(t) * numNATs) }

// natMask has the bits of every type for NAT n.
func natMask(n natIdx) uint32 {
	var m uint32
	for t := range typeIdx(numTypes) {
		m |= comboBit(t, n)
	}
	return m
}

// addProxyIP counts a proxy address (by its hash h) that polled with type t
// and NAT n from country cc: once per period towards the total and its
// country, once per type and once per NAT type, as Snowflake's seen-IP map
// does.
func (p *period) addProxyIP(h uint64, t typeIdx, n natIdx, cc string, maxIPs int) addResult {
	mask, seen := p.seen[h]
	bit := comboBit(t, n)
	if mask&bit != 0 {
		return addedSeen
	}
	if !seen {
		if len(p.seen) >= maxIPs {
			return addedUntracked
		}
		p.ipsTotal++
		p.proxyCountries[cc]++
	}
	if mask&natMask(n) == 0 {
		p.ipsByNAT[n]++
	}
	if mask&typeMask(t) == 0 {
		p.ipsByType[t]++
	}
	p.seen[h] = mask | bit
	return addedNew
}

// countClient counts one client rendezvous outcome as Snowflake does:
// denials split by the client's NAT (unknown counts as restricted), and
// every poll per rendezvous method and per country.
func (p *period) countClient(n natIdx, m methodIdx, s statusIdx, cc string) {
	switch s {
	case statusDenied:
		p.denied++
		if n == natUnrestricted {
			p.unrestrictedDenied++
		} else {
			p.restrictedDenied++
		}
	case statusMatched:
		p.matched++
	case statusTimeout:
		p.timeout++
	}
	if m < numDescriptorMethods {
		p.methodPolls[m]++
		p.methodCountries[m][cc]++
	}
}
