package sdp

import (
	"encoding/json"
	"net/netip"
	"os"
	"strings"
	"testing"
)

func TestIsLocal(t *testing.T) {
	tests := []struct {
		ip    string
		local bool
	}{
		{"192.168.0.1", true},
		{"10.1.2.3", true},
		{"172.16.0.1", true},
		{"100.64.0.1", true},
		{"100.111.1.1", true},
		{"169.254.1.1", true},
		{"127.0.0.1", true},
		{"0.0.0.0", true},
		{"0.1.2.3", true},
		{"224.0.0.1", true},
		{"::", true},
		{"::1", true},
		{"fc00::", true},
		{"fd12:3456::1", true},
		{"fe80::1", true},
		{"::ffff:192.168.1.1", true},
		{"::ffff:127.0.0.1", true},
		{"1.1.1.1", false},
		{"8.8.8.8", false},
		{"100.128.0.1", false},
		{"2001:db8::1", false},
		{"2606:4700::1111", false},
		{"::ffff:1.2.3.4", false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			if got := IsLocal(netip.MustParseAddr(tt.ip)); got != tt.local {
				t.Errorf("IsLocal(%s) = %v, want %v", tt.ip, got, tt.local)
			}
		})
	}
	if !IsLocal(netip.Addr{}) {
		t.Error("IsLocal(invalid) = false, want true")
	}
}

// The cases follow Snowflake's TestRemoteIPFromSDP (Snowflake's common/util tests).
func TestClientIP(t *testing.T) {
	const head = "v=0\r\no=- 4358805017720277108 2 IN IP4 8.8.8.8\r\ns=-\r\nt=0 0\r\n" +
		"a=group:BUNDLE data\r\na=msid-semantic: WMS\r\n" +
		"m=application 56688 DTLS/SCTP 5000\r\n"
	tests := []struct {
		name string
		sdp  string
		want string // "" = none
	}{
		{"public c line", head + "c=IN IP4 1.2.3.4\r\n", "1.2.3.4"},
		{"local c line only", head + "c=IN IP4 127.0.0.1\r\n", ""},
		{"private c line only", head + "c=IN IP4 192.168.1.2\r\n", ""},
		{"ipv6 c line", head + "c=IN IP6 2001:db8::7\r\n", "2001:db8::7"},
		{"candidate only", head + "c=IN IP4 0.0.0.0\r\n" +
			"a=candidate:3769337065 1 udp 2122260223 1.2.3.4 56688 typ host generation 0 network-id 1 network-cost 50\r\n", "1.2.3.4"},
		{"candidate beats c line", head + "c=IN IP4 5.6.7.8\r\n" +
			"a=candidate:1 1 udp 2122260223 1.2.3.4 56688 typ host\r\n", "1.2.3.4"},
		{"skips local candidates", head + "c=IN IP4 0.0.0.0\r\n" +
			"a=candidate:1 1 udp 2122260223 10.0.0.2 56688 typ host\r\n" +
			"a=candidate:2 1 udp 2122260223 abcd.local 56688 typ host\r\n" +
			"a=candidate:3 1 udp 1686052607 9.9.9.9 5000 typ srflx raddr 10.0.0.2 rport 56688\r\n", "9.9.9.9"},
		{"ipv6 candidate", head + "c=IN IP4 0.0.0.0\r\n" +
			"a=candidate:1 1 udp 2122260223 2001:db8::1 56688 typ host\r\n", "2001:db8::1"},
		{"bare LF", strings.ReplaceAll(head+"c=IN IP4 1.2.3.4\r\n", "\r\n", "\n"), "1.2.3.4"},
		{"malformed", "c=IN IP4\r\na=candidate:1 1 udp\r\nc=IN IP9 1.2.3.4\r\n", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ip, ok := ClientIP(tt.sdp)
			if tt.want == "" {
				if ok {
					t.Fatalf("ClientIP = %v, want none", ip)
				}
				return
			}
			if !ok || ip != netip.MustParseAddr(tt.want) {
				t.Fatalf("ClientIP = %v, %v; want %s", ip, ok, tt.want)
			}
		})
	}
}

func TestClientIPSnowflakeOffer(t *testing.T) {
	// testdata/sdp-offer.json is Snowflake v2.14.1's vector (loopback host
	// candidates only), the same file as messages/testdata/sdp-offer.json.
	b, err := os.ReadFile("testdata/sdp-offer.json")
	if err != nil {
		t.Fatal(err)
	}
	var desc struct{ SDP string }
	if err := json.Unmarshal(b, &desc); err != nil {
		t.Fatal(err)
	}
	if ip, ok := ClientIP(desc.SDP); ok {
		t.Errorf("ClientIP(loopback offer) = %v, want none", ip)
	}
	if got := StripLocalCandidates(desc.SDP); strings.Contains(got, "a=candidate") || !strings.Contains(got, "a=end-of-candidates\r\n") {
		t.Errorf("StripLocalCandidates kept a loopback candidate or lost other lines:\n%s", got)
	}
}

func TestStripLocalCandidates(t *testing.T) {
	in := "v=0\r\n" +
		"a=candidate:1 1 udp 2130706431 192.168.1.2 5000 typ host\r\n" +
		"a=candidate:2 1 udp 2130706431 1.2.3.4 5000 typ host\r\n" +
		"a=candidate:3 1 udp 2130706431 ::1 5000 typ host\r\n" +
		"a=candidate:4 1 udp 2130706431 0.0.0.0 5000 typ host\r\n" +
		"a=candidate:5 1 udp 2130706431 127.0.0.1 5000 typ host\r\n" +
		"a=candidate:6 1 udp 2130706431 169.254.1.1 5000 typ host\r\n" +
		"a=candidate:7 1 udp 2130706431 100.64.1.1 5000 typ host\r\n" +
		"a=candidate:8 1 udp 2130706431 fd00::1 5000 typ host\r\n" +
		"a=candidate:9 1 udp 2130706431 1234.local 5000 typ host\r\n" +
		"a=candidate:10 1 udp 1694498815 2001:db8::9 6000 typ srflx raddr 0.0.0.0 rport 0\r\n" +
		"a=candidate:broken\r\n" +
		"a=end-of-candidates\r\n"
	want := "v=0\r\n" +
		"a=candidate:2 1 udp 2130706431 1.2.3.4 5000 typ host\r\n" +
		"a=candidate:10 1 udp 1694498815 2001:db8::9 6000 typ srflx raddr 0.0.0.0 rport 0\r\n" +
		"a=end-of-candidates\r\n"
	if got := StripLocalCandidates(in); got != want {
		t.Errorf("StripLocalCandidates =\n%q\nwant\n%q", got, want)
	}
	noEOL := "a=candidate:2 1 udp 2130706431 1.2.3.4 5000 typ host"
	if got := StripLocalCandidates(noEOL); got != noEOL {
		t.Errorf("last line without EOL: got %q", got)
	}
}

func TestParseCandidate(t *testing.T) {
	c, ok := ParseCandidate("a=candidate:3 1 udp 1686052607 9.9.9.9 5000 typ srflx raddr 10.0.0.2 rport 56688")
	if !ok || c.Address != netip.MustParseAddr("9.9.9.9") || c.Type != "srflx" || c.Host != "9.9.9.9" {
		t.Errorf("ParseCandidate = %+v, %v", c, ok)
	}
	if _, ok := ParseCandidate("candidate:3 1 udp 1 9.9.9.9 5000 type host"); ok {
		t.Error("accepted a line without typ")
	}
}

func TestSessionAttribute(t *testing.T) {
	const attr = "x-test"
	tests := []struct{ in, want string }{
		{"v=0\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:0\r\n",
			"v=0\r\nt=0 0\r\na=x-test\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\na=mid:0\r\n"},
		{"v=0\nt=0 0\nm=application 9\n", "v=0\nt=0 0\na=x-test\nm=application 9\n"},
		{"v=0\r\nt=0 0", "v=0\r\nt=0 0\r\na=x-test\r\n"},
		{"m=application 9\r\n", "a=x-test\r\nm=application 9\r\n"},
		{"", "a=x-test\r\n"},
	}
	for _, tt := range tests {
		got := AddSessionAttribute(tt.in, attr)
		if got != tt.want {
			t.Errorf("AddSessionAttribute(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if HasSessionAttribute(tt.in, attr) || !HasSessionAttribute(got, attr) {
			t.Errorf("HasSessionAttribute before and after adding to %q: wrong", tt.in)
		}
	}
	for sdp, want := range map[string]bool{
		"v=0\r\na=x-test:1\r\n":                  true,
		"v=0\r\na=x-testing\r\n":                 false,
		"v=0\r\nm=application 9\r\na=x-test\r\n": false, // media level
		"v=0\r\nb=a=x-test\r\n":                  false,
	} {
		if got := HasSessionAttribute(sdp, attr); got != want {
			t.Errorf("HasSessionAttribute(%q) = %v, want %v", sdp, got, want)
		}
	}
}

func FuzzClientIP(f *testing.F) {
	f.Add("c=IN IP4 1.2.3.4\r\n")
	f.Add("a=candidate:1 1 udp 2122260223 1.2.3.4 56688 typ host\r\n")
	f.Add("a=candidate:1 1 udp 2122260223 abcd.local 56688 typ host\nc=IN IP6 ::1\n")
	if b, err := os.ReadFile("testdata/sdp-offer.json"); err == nil {
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		if ip, ok := ClientIP(s); ok && IsLocal(ip) {
			t.Fatalf("ClientIP returned local address %v", ip)
		}
		out := StripLocalCandidates(s)
		if len(out) > len(s) {
			t.Fatalf("StripLocalCandidates grew its input")
		}
		if StripLocalCandidates(out) != out {
			t.Fatalf("StripLocalCandidates is not idempotent")
		}
		if added := AddSessionAttribute(s, "x-fuzz"); !HasSessionAttribute(added, "x-fuzz") {
			t.Fatalf("AddSessionAttribute's line is not found")
		}
	})
}

func BenchmarkClientIP(b *testing.B) {
	sdp := "v=0\r\nc=IN IP4 0.0.0.0\r\n" + strings.Repeat("a=candidate:1 1 udp 2122260223 10.0.0.2 56688 typ host\r\n", 4) +
		"a=candidate:3 1 udp 1686052607 9.9.9.9 5000 typ srflx raddr 10.0.0.2 rport 56688\r\n"
	b.ReportAllocs()
	for b.Loop() {
		ClientIP(sdp)
	}
}
