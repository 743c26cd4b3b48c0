package stats

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// checkDescriptorShape fails unless d has the lines of emptyDescriptor, in
// order, each with a value made only of digits, country codes, '=' and ','.
func checkDescriptorShape(t *testing.T, d string) {
	t.Helper()
	got := strings.Split(strings.TrimSuffix(d, "\n"), "\n")
	want := strings.Split(strings.TrimSuffix(emptyDescriptor, "\n"), "\n")
	if len(got) != len(want) || got[0] != want[0] {
		t.Fatalf("descriptor:\n%s", d)
	}
	for i := 1; i < len(got); i++ {
		key, val, _ := strings.Cut(got[i], " ")
		wantKey, _, _ := strings.Cut(want[i], " ")
		if key != wantKey || strings.Trim(val, "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ?=,") != "" {
			t.Errorf("line %d %q, want key %q and a plain value", i, got[i], wantKey)
		}
	}
}

// FuzzLabels feeds arbitrary strings to every Recorder method and checks
// that every exported label value stays in its fixed set and the
// descriptor keeps its shape.
func FuzzLabels(f *testing.F) {
	for _, s := range []string{"", "standalone", "unknown", "restricted", "ampcache", "timeout", "client",
		"<script>alert(1)</script>", "a\nb", "snowflake-ips XX=1", "\xff", "CA"} {
		f.Add(s, []byte{129, 97, 208, 23})
	}
	f.Fuzz(func(t *testing.T, s string, ip []byte) {
		r := newTestRecorder(t, Config{})
		a, _ := netip.AddrFromSlice(ip)
		r.ProxyPoll(a, s, s, len(s)%2 == 0)
		r.ProxyPollResult(s, s, len(s)%3 == 0)
		r.ProxyRejectedRelayPattern(s, s, true)
		r.ProxyAnswer(s, false)
		r.ProxyUnanswered(s)
		r.ClientPoll(a, s, s, s)
		r.ClientPoll(a, s, MethodHTTP, StatusDenied)
		r.AvailableProxies(s, s, 1)
		r.RateLimited(s)
		r.RequestRejected(s, s)
		r.ObserveRequest(s, time.Duration(len(s)))
		checkLabels(t, flurrySeries(scrape(t, r)))
		checkDescriptorShape(t, descriptor(t, r))
	})
}
