package stats

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/messages"
)

// The tail every descriptor of a period without client activity ends with,
// after the proxy lines (Snowflake's TestMetrics expectations).
const noClientsTail = `client-denied-count 0
client-restricted-denied-count 0
client-unrestricted-denied-count 0
client-snowflake-match-count 0
client-snowflake-timeout-count 0
client-http-count 0
client-http-ips 
client-ampcache-count 0
client-ampcache-ips 
client-sqs-count 0
client-sqs-ips 
`

// emptyDescriptor is the descriptor of a period in which nothing happened.
const emptyDescriptor = `snowflake-stats-end 2026-01-02 03:04:05 (86400 s)
snowflake-ips 
snowflake-ips-standalone 0
snowflake-ips-webext 0
snowflake-ips-badge 0
snowflake-ips-iptproxy 0
snowflake-ips-bloco 0
snowflake-ips-total 0
snowflake-idle-count 0
snowflake-proxy-poll-with-relay-url-count 0
snowflake-proxy-poll-without-relay-url-count 0
snowflake-proxy-rejected-for-relay-url-count 0
` + noClientsTail + `snowflake-ips-nat-restricted 0
snowflake-ips-nat-unrestricted 0
snowflake-ips-nat-unknown 0
`

// pollIdle records one proxy poll that ended with "no match".
func pollIdle(r *Recorder, ip netip.Addr, proxyType, nat string) {
	proxyType = messages.NormalizeProxyType(proxyType)
	r.ProxyPoll(ip, proxyType, nat, true)
	r.ProxyPollResult(proxyType, nat, false)
}

// Snowflake's TestMetrics: four proxies of four types (one unknown) from CA
// addresses, each poll carrying a relay pattern and ending idle.
func TestDescriptorProxyPolls(t *testing.T) {
	r := newTestRecorder(t, Config{})
	for i, typ := range []string{"", "standalone", "badge", "webext"} {
		pollIdle(r, addr(t, fmt.Sprintf("129.97.208.%d", 23+i)), typ, messages.NATUnknown)
	}
	const want = `snowflake-stats-end 2026-01-02 03:04:05 (86400 s)
snowflake-ips CA=4
snowflake-ips-standalone 1
snowflake-ips-webext 1
snowflake-ips-badge 1
snowflake-ips-iptproxy 0
snowflake-ips-bloco 0
snowflake-ips-total 4
snowflake-idle-count 8
snowflake-proxy-poll-with-relay-url-count 8
snowflake-proxy-poll-without-relay-url-count 0
snowflake-proxy-rejected-for-relay-url-count 0
` + noClientsTail + `snowflake-ips-nat-restricted 0
snowflake-ips-nat-unrestricted 0
snowflake-ips-nat-unknown 4
`
	if got := descriptor(t, r); got != want {
		t.Errorf("descriptor:\n%s\nwant:\n%s", got, want)
	}
	// The period is reset: the next descriptor is empty.
	if got := descriptor(t, r); got != emptyDescriptor {
		t.Errorf("descriptor after reset:\n%s\nwant:\n%s", got, emptyDescriptor)
	}
}

func TestDescriptorClients(t *testing.T) {
	ca := "129.97.208.23"
	tests := []struct {
		name string
		do   func(r *Recorder)
		want string // a block that must appear
	}{
		{"no proxies, unknown NAT", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnknown, MethodHTTP, StatusDenied)
		}, "client-denied-count 8\nclient-restricted-denied-count 8\nclient-unrestricted-denied-count 0\n" +
			"client-snowflake-match-count 0\nclient-snowflake-timeout-count 0\nclient-http-count 8\nclient-http-ips CA=8\n"},
		{"denied restricted", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATRestricted, MethodHTTP, StatusDenied)
		}, "client-denied-count 8\nclient-restricted-denied-count 8\nclient-unrestricted-denied-count 0\nclient-snowflake-match-count 0\n"},
		{"denied unrestricted", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnrestricted, MethodHTTP, StatusDenied)
		}, "client-denied-count 8\nclient-restricted-denied-count 0\nclient-unrestricted-denied-count 8\nclient-snowflake-match-count 0\n"},
		{"binning boundary: 9 denials are 16", func(r *Recorder) {
			for range 9 {
				r.ClientPoll(addr(t, ca), messages.NATRestricted, MethodHTTP, StatusDenied)
			}
		}, "client-denied-count 16\nclient-restricted-denied-count 16\nclient-unrestricted-denied-count 0\n"},
		{"8 denials stay 8", func(r *Recorder) {
			for range 8 {
				r.ClientPoll(addr(t, ca), messages.NATRestricted, MethodHTTP, StatusDenied)
			}
		}, "client-denied-count 8\nclient-restricted-denied-count 8\n"},
		{"match", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnknown, MethodHTTP, StatusMatched)
		}, "client-denied-count 0\nclient-restricted-denied-count 0\nclient-unrestricted-denied-count 0\n" +
			"client-snowflake-match-count 8\nclient-snowflake-timeout-count 0\n"},
		{"timeout", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnknown, MethodHTTP, StatusTimeout)
		}, "client-snowflake-match-count 0\nclient-snowflake-timeout-count 8\n"},
		{"ampcache from SDP address", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnknown, MethodAMPCache, StatusMatched)
		}, "client-http-count 0\nclient-http-ips \nclient-ampcache-count 8\nclient-ampcache-ips CA=8\n"},
		{"sqs without address", func(r *Recorder) {
			r.ClientPoll(netip.Addr{}, messages.NATUnknown, MethodSQS, StatusMatched)
		}, "client-sqs-count 8\nclient-sqs-ips ??=8\nsnowflake-ips-nat-restricted 0\n"},
		{"countries sorted and binned", func(r *Recorder) {
			for i, ip := range []string{"198.51.100.1", "198.51.100.2", "203.0.113.9", "192.0.2.1", "2001:db8::1"} {
				for range 1 + 9*(i/2) {
					r.ClientPoll(addr(t, ip), messages.NATUnknown, MethodHTTP, StatusMatched)
				}
			}
		}, "client-http-count 48\nclient-http-ips CA=24,??=16,DE=16,FR=8\n"},
		{"unknown method and status are counted nowhere in the descriptor", func(r *Recorder) {
			r.ClientPoll(addr(t, ca), messages.NATUnknown, "carrier-pigeon", StatusMatched)
			r.ClientPoll(addr(t, ca), messages.NATUnknown, MethodHTTP, "exploded")
		}, "client-denied-count 0\nclient-restricted-denied-count 0\nclient-unrestricted-denied-count 0\n" +
			"client-snowflake-match-count 8\nclient-snowflake-timeout-count 0\nclient-http-count 8\nclient-http-ips CA=8\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRecorder(t, Config{})
			tt.do(r)
			got := descriptor(t, r)
			if !strings.Contains(got, tt.want) {
				t.Errorf("descriptor:\n%s\nmissing:\n%s", got, tt.want)
			}
			if again := descriptor(t, r); again != emptyDescriptor {
				t.Errorf("descriptor after reset:\n%s", again)
			}
		})
	}
}

func TestDescriptorProxyAddresses(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		noGeoIP bool
		do      func(r *Recorder)
		want    []string // lines (without "\n") that must appear
	}{
		{"same address twice counts once", Config{}, false, func(r *Recorder) {
			pollIdle(r, addr(t, "129.97.208.23"), "", messages.NATUnknown)
			pollIdle(r, addr(t, "129.97.208.23"), "", messages.NATUnknown)
		}, []string{"snowflake-ips CA=1", "snowflake-ips-total 1", "snowflake-idle-count 8", "snowflake-ips-nat-unknown 1"}},
		{"IPv4-mapped IPv6 is the same address", Config{}, false, func(r *Recorder) {
			pollIdle(r, addr(t, "129.97.208.23"), "standalone", messages.NATUnknown)
			pollIdle(r, addr(t, "::ffff:129.97.208.23"), "standalone", messages.NATUnknown)
		}, []string{"snowflake-ips CA=1", "snowflake-ips-total 1", "snowflake-ips-standalone 1"}},
		{"NAT types", Config{}, false, func(r *Recorder) {
			pollIdle(r, addr(t, "129.97.208.23"), "unknown", messages.NATRestricted)
			pollIdle(r, addr(t, "129.97.208.24"), "unknown", messages.NATUnrestricted)
		}, []string{"snowflake-ips-nat-restricted 1", "snowflake-ips-nat-unrestricted 1", "snowflake-ips-nat-unknown 0", "snowflake-ips-total 2"}},
		{"one address, several types and NATs", Config{}, false, func(r *Recorder) {
			pollIdle(r, addr(t, "203.0.113.5"), "standalone", messages.NATRestricted)
			pollIdle(r, addr(t, "203.0.113.5"), "webext", messages.NATRestricted)
			pollIdle(r, addr(t, "203.0.113.5"), "webext", messages.NATUnrestricted)
		}, []string{"snowflake-ips DE=1", "snowflake-ips-standalone 1", "snowflake-ips-webext 1", "snowflake-ips-total 1",
			"snowflake-ips-nat-restricted 1", "snowflake-ips-nat-unrestricted 1"}},
		{"countries sorted by count then code", Config{}, false, func(r *Recorder) {
			for _, ip := range []string{"203.0.113.1", "198.51.100.1", "198.51.100.2", "192.0.2.7", "2001:db8::5"} {
				pollIdle(r, addr(t, ip), "standalone", messages.NATUnknown)
			}
		}, []string{"snowflake-ips FR=2,??=1,CA=1,DE=1", "snowflake-ips-total 5"}},
		{"without geoip proxies are still counted", Config{}, true, func(r *Recorder) {
			pollIdle(r, addr(t, "129.97.208.23"), "badge", messages.NATUnknown)
		}, []string{"snowflake-ips ??=1", "snowflake-ips-badge 1", "snowflake-ips-total 1"}},
		{"relay pattern rejections", Config{}, false, func(r *Recorder) {
			r.ProxyRejectedRelayPattern("standalone", messages.NATUnknown, false)
			r.ProxyRejectedRelayPattern("standalone", messages.NATUnknown, true)
			r.ProxyPoll(addr(t, "129.97.208.23"), "standalone", messages.NATUnknown, false)
			r.ProxyPollResult("standalone", messages.NATUnknown, true)
		}, []string{"snowflake-ips CA=1", "snowflake-idle-count 0", "snowflake-proxy-poll-with-relay-url-count 8",
			"snowflake-proxy-poll-without-relay-url-count 8", "snowflake-proxy-rejected-for-relay-url-count 8"}},
		{"address set bound", Config{MaxProxyIPs: 2}, false, func(r *Recorder) {
			for _, ip := range []string{"129.97.208.1", "129.97.208.2", "129.97.208.3", "129.97.208.1"} {
				pollIdle(r, addr(t, ip), "standalone", messages.NATUnknown)
			}
		}, []string{"snowflake-ips CA=2", "snowflake-ips-total 2", "snowflake-idle-count 8"}},
		{"invalid address: poll counted, address not", Config{}, false, func(r *Recorder) {
			pollIdle(r, netip.Addr{}, "standalone", messages.NATUnknown)
		}, []string{"snowflake-ips ", "snowflake-ips-total 0", "snowflake-idle-count 8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newTestRecorder(t, tt.cfg)
			if tt.noGeoIP {
				var err error
				if r, err = New(Config{Now: tt.cfg.Now}); err != nil {
					t.Fatal(err)
				}
			}
			tt.do(r)
			got := descriptor(t, r)
			for _, line := range tt.want {
				if !strings.Contains(got, "\n"+line+"\n") {
					t.Errorf("descriptor:\n%s\nmissing line %q", got, line)
				}
			}
		})
	}
}

// The set of addresses seen is per period: an address seen again in the
// next period is counted again.
func TestDescriptorSeenAddressesClearedEachPeriod(t *testing.T) {
	r := newTestRecorder(t, Config{})
	for range 3 {
		pollIdle(r, addr(t, "129.97.208.23"), "", messages.NATUnknown)
		got := descriptor(t, r)
		for _, line := range []string{"snowflake-ips CA=1", "snowflake-ips-total 1", "snowflake-ips-nat-unknown 1"} {
			if !strings.Contains(got, "\n"+line+"\n") {
				t.Errorf("descriptor:\n%s\nmissing line %q", got, line)
			}
		}
	}
}

// Snowflake's TestFormatAndClearCountryStats vectors.
func TestAppendCountries(t *testing.T) {
	counts := map[string]uint64{
		"IT": 50, "FR": 200, "TZ": 100, "CN": 250, "RU": 150, "CA": 1, "BE": 1, "PH": 1,
		// These three bin to 112: by count MY,ZA,AT unbinned, by code
		// AT,MY,ZA binned.
		"AT": 105, "MY": 112, "ZA": 108,
	}
	tests := []struct {
		binned bool
		want   string
	}{
		{false, "CN=250,FR=200,RU=150,MY=112,ZA=108,AT=105,TZ=100,IT=50,BE=1,CA=1,PH=1"},
		{true, "CN=256,FR=200,RU=152,AT=112,MY=112,ZA=112,TZ=104,IT=56,BE=8,CA=8,PH=8"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint("binned=", tt.binned), func(t *testing.T) {
			if got := string(appendCountries(nil, counts, tt.binned)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	if got := string(appendCountries(nil, nil, true)); got != "" {
		t.Errorf("empty: got %q", got)
	}
}

func TestBinCount(t *testing.T) {
	for _, tt := range []struct{ in, want uint64 }{{0, 0}, {1, 8}, {7, 8}, {8, 8}, {9, 16}, {16, 16}, {17, 24}, {250, 256}} {
		if got := binCount(tt.in); got != tt.want {
			t.Errorf("binCount(%d) = %d, want %d", tt.in, got, tt.want)
		}
	}
}

func TestDescriptorInterval(t *testing.T) {
	r := newTestRecorder(t, Config{Interval: 90 * 1e9})
	got := descriptor(t, r)
	if want := "snowflake-stats-end 2026-01-02 03:04:05 (90 s)\n"; !strings.HasPrefix(got, want) {
		t.Errorf("descriptor starts %q, want %q", got[:strings.IndexByte(got, '\n')+1], want)
	}
}
