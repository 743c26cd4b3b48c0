package stats

import (
	"io"
	"strconv"
)

// Available counts proxies by type and NAT type. Types outside
// messages.KnownProxyTypes count as "unknown", NAT types other than
// restricted and unrestricted as "unknown". The zero value is empty and
// ready to use.
type Available struct {
	n [numTypes][numNATs]int
}

// Add adds delta proxies of proxyType and nat.
func (a *Available) Add(proxyType, nat string, delta int) {
	a.n[typeIndex(proxyType)][natIndex(nat)] += delta
}

// Count returns the number of proxies of proxyType and nat (never below 0).
func (a Available) Count(proxyType, nat string) int {
	return max(0, a.n[typeIndex(proxyType)][natIndex(nat)])
}

// Type returns the number of proxies of proxyType.
func (a Available) Type(proxyType string) int {
	t := typeIndex(proxyType)
	sum := 0
	for n := range natIdx(numNATs) {
		sum += max(0, a.n[t][n])
	}
	return sum
}

// NAT returns the number of proxies of NAT type nat.
func (a Available) NAT(nat string) int {
	n := natIndex(nat)
	sum := 0
	for t := range typeIdx(numTypes) {
		sum += max(0, a.n[t][n])
	}
	return sum
}

// Total returns the number of proxies.
func (a Available) Total() int {
	sum := 0
	for t := range typeIdx(numTypes) {
		for n := range natIdx(numNATs) {
			sum += max(0, a.n[t][n])
		}
	}
	return sum
}

// WriteDebug writes Snowflake's /debug summary of a, byte for byte, except
// that the per-type lines come in messages.KnownProxyTypes order (Snowflake
// prints them in Go map order). As in Snowflake, a known type appears only
// when at least one proxy has it, the unknown line always, and the text has
// no trailing newline:
//
//	current snowflakes available: 3
//		standalone proxies: 2
//		unknown proxies: 1
//	NAT Types available:
//		restricted: 1
//		unrestricted: 2
//		unknown: 0
func WriteDebug(w io.Writer, a Available) error {
	b := make([]byte, 0, 256)
	b = append(b, "current snowflakes available: "...)
	b = strconv.AppendInt(b, int64(a.Total()), 10)
	b = append(b, '\n')
	for t := range typeIdx(numTypes) {
		if t == typeUnknown {
			continue
		}
		if c := a.Type(t.String()); c > 0 {
			b = append(b, '\t')
			b = append(b, t.String()...)
			b = append(b, " proxies: "...)
			b = strconv.AppendInt(b, int64(c), 10)
			b = append(b, '\n')
		}
	}
	b = append(b, "\tunknown proxies: "...)
	b = strconv.AppendInt(b, int64(a.Type(typeUnknown.String())), 10)
	b = append(b, "\nNAT Types available:"...)
	for n := range natIdx(numNATs) {
		b = append(b, "\n\t"...)
		b = append(b, n.String()...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(a.NAT(n.String())), 10)
	}
	_, err := w.Write(b)
	return err
}
