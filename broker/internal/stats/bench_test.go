package stats

import (
	"io"
	"net/netip"
	"testing"
	"time"

	"github.com/flurrypt/flurry/messages"
)

// benchAddrs returns n distinct addresses, some in the test geoip ranges.
func benchAddrs(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	for i := range out {
		out[i] = netip.AddrFrom4([4]byte{129, 97, byte(i >> 8), byte(i)})
	}
	return out
}

func BenchmarkProxyPoll(b *testing.B) {
	r := newTestRecorder(b, Config{})
	addrs := benchAddrs(4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := addrs[i%len(addrs)]
		i++
		r.ProxyPoll(a, messages.ProxyTypeStandalone, messages.NATUnrestricted, true)
		r.AvailableProxies(messages.ProxyTypeStandalone, messages.NATUnrestricted, +1)
		r.AvailableProxies(messages.ProxyTypeStandalone, messages.NATUnrestricted, -1)
		r.ProxyPollResult(messages.ProxyTypeStandalone, messages.NATUnrestricted, false)
	}
}

func BenchmarkClientPoll(b *testing.B) {
	r := newTestRecorder(b, Config{})
	addrs := benchAddrs(4096)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		a := addrs[i%len(addrs)]
		i++
		r.ClientPoll(a, messages.NATUnknown, MethodHTTP, StatusMatched)
		r.ObserveRequest(EndpointClient, 30*time.Millisecond)
	}
}

func BenchmarkScrape(b *testing.B) {
	r := newTestRecorder(b, Config{})
	for i, a := range benchAddrs(1024) {
		r.ProxyPoll(a, messages.KnownProxyTypes()[i%5], messages.NATUnknown, true)
		r.ClientPoll(a, messages.NATRestricted, MethodHTTP, StatusDenied)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Registry().Gather(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEndPeriod(b *testing.B) {
	r := newTestRecorder(b, Config{})
	addrs := benchAddrs(1024)
	b.ReportAllocs()
	for b.Loop() {
		for _, a := range addrs[:64] {
			r.ProxyPoll(a, messages.ProxyTypeWebExt, messages.NATRestricted, true)
		}
		if err := r.EndPeriod(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}
