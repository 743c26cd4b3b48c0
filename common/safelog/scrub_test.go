package safelog

import (
	"net/netip"
	"strings"
	"testing"
)

// TestScrubMessages holds the messages of Snowflake's TestLogScrubberMessages
// (ptutil/safelog) and more, each with the expected output.
func TestScrubMessages(t *testing.T) {
	tests := []struct{ in, want string }{
		// Snowflake's vectors.
		{"http: TLS handshake error from 129.97.208.23:38310: ", "http: TLS handshake error from [scrubbed]: "},
		{"http2: panic serving [2620:101:f000:780:9097:75b1:519f:dbb8]:58344: interface conversion: *http2.responseWriter is not http.Hijacker: missing method Hijack",
			"http2: panic serving [scrubbed]: interface conversion: *http2.responseWriter is not http.Hijacker: missing method Hijack"},
		{"a=fingerprint:sha-256 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A:D9:EB:23:34:B2:30:E9:1B:2A:A6:A9:E0:44:72:CC:74",
			"a=fingerprint:sha-256 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A:D9:EB:23:34:B2:30:E9:1B:2A:A6:A9:E0:44:72:CC:74"},
		{"(1:2:3:4:c:d:e:f) {1:2:3:4:c:d:e:f}", "([scrubbed]) {[scrubbed]}"},
		{"2019/05/08 15:37:31 starting", "2019/05/08 15:37:31 starting"},
		{"error dialing relay: wss://snowflake.torproject.net/?client_ip=6201%3ac8%3A3004%3A%3A1234", "error dialing relay: wss://snowflake.torproject.net/?client_ip=[scrubbed]"},
		{"http2: panic serving [fd00%3a111%3af000%3a777%3a9999%3abbbb%3affff%3adddd]:58344: xxx", "http2: panic serving [scrubbed]: xxx"},
		{"http2: panic serving [fd00%3A111%3Af000%3A777%3A9999%3Abbbb%3Affff%3Adddd]:58344: xxx", "http2: panic serving [scrubbed]: xxx"},
		{"error dialing relay: wss://snowflake.torproject.net/?client_ip=fd00%3A8888%3Abbbb%3Acccc%3Adddd%3Aeeee%3A2222%3A123 = dial tcp xxx",
			"error dialing relay: wss://snowflake.torproject.net/?client_ip=[scrubbed] = dial tcp xxx"},
		{"http2: panic serving [1%3A2%3A3%3A%3Ad%3Ae%3Af]:55: xxx", "http2: panic serving [scrubbed]: xxx"},
		{"error dialing relay: wss://snowflake.torproject.net/?client_ip=1%3A2%3A3%3A%3Ad%3Ae%3Af = dial tcp xxx",
			"error dialing relay: wss://snowflake.torproject.net/?client_ip=[scrubbed] = dial tcp xxx"},

		// Positions.
		{"1.2.3.4 connected", "[scrubbed] connected"},
		{"connected 1.2.3.4", "connected [scrubbed]"},
		{"1.2.3.4", "[scrubbed]"},
		{"connected to 1.2.3.4.", "connected to [scrubbed]."},
		{"from 1.2.3.4: EOF", "from [scrubbed]: EOF"},
		{"addr=1.2.3.4, next", "addr=[scrubbed], next"},
		{"client_ip=2001:db8::1", "client_ip=[scrubbed]"},
		{"client_ip=2001:db8::1&x=y", "client_ip=[scrubbed]&x=y"},
		{"GET http://1.2.3.4:80/path", "GET http://[scrubbed]/path"},
		{"GET http://[2001:db8::1]:8080/path", "GET http://[scrubbed]/path"},
		{"dial tcp [::1]:443: connection refused", "dial tcp [scrubbed]: connection refused"},
		{"listen [::]:443", "listen [scrubbed]"},
		{`{"ip":"1.2.3.4","ip6":"::1"}`, `{"ip":"[scrubbed]","ip6":"[scrubbed]"}`},
		{"ip:1.2.3.4 ok", "ip:[scrubbed] ok"},
		{"ip%3A1.2.3.4", "ip%3A[scrubbed]"},
		{"url?client_ip%3D1.2.3.4%26a", "url?client_ip%3D[scrubbed]%26a"},
		{"peers 1.2.3.4\t5.6.7.8\n9.9.9.9", "peers [scrubbed]\t[scrubbed]\n[scrubbed]"},
		{"a 1.2.3.4,5.6.7.8;::1|fe80::1", "a [scrubbed],[scrubbed];[scrubbed]|[scrubbed]"},
		{"dial 1.2.3.4:http", "dial [scrubbed]:http"},
		{"from ::1: EOF", "from [scrubbed]: EOF"},
		{"host-1.2.3.4 x", "host-[scrubbed] x"},
		{"1.2.3.4.nip.io", "[scrubbed].nip.io"},
		{"zone fe80::1%eth0 x", "zone [scrubbed]%eth0 x"},
		{"zone [fe80::1%eth0]:443 x", "zone [scrubbed] x"},
		{"zone [fe80::1%25eth0] x", "zone [scrubbed] x"},
		{"[1.2.3.4]:80", "[scrubbed]"},
		{"::ffff:192.0.2.1 end", "[scrubbed] end"},
		{"x ::ffff:192.0.2.1", "x [scrubbed]"},
		{"1:2:3:4:5:6:7:8: end", "[scrubbed]: end"},
		{"1:2:3:4:5:6:7:: end", "[scrubbed] end"},
		{"[1.2.3.4 5.6.7.8]", "[[scrubbed] [scrubbed]]"},
		{"[[::1]]", "[[scrubbed]]"},
		{"%3A%3A1", "[scrubbed]"},
		{"ip=[::1]:123456", "ip=[scrubbed]:123456"},
		{"é1.2.3.4", "é[scrubbed]"},
		{"1.2.3.4 and 1.2.3.4", "[scrubbed] and [scrubbed]"},

		// Not addresses.
		{"", ""},
		{"12:34:56", "12:34:56"},
		{"time=2024-01-02T15:04:05.123Z level=INFO", "time=2024-01-02T15:04:05.123Z level=INFO"},
		{"12:34:56.789", "12:34:56.789"},
		{"version 1.2.3 released", "version 1.2.3 released"},
		{"version 1.2.3.4.5 released", "version 1.2.3.4.5 released"},
		{"v1.2.3.4", "v1.2.3.4"},
		{"x.1.2.3.4", "x.1.2.3.4"},
		{"256.1.1.1", "256.1.1.1"},
		{"1.2.3.1000", "1.2.3.1000"},
		{"1.2.3.4a", "1.2.3.4a"},
		{"1.2.3.4_", "1.2.3.4_"},
		{"1.2.3.4:80:ab", "1.2.3.4:80:ab"},
		{"1.2.3.4:5.6", "1.2.3.4:5.6"},
		{"deadbeefcafe0123456789abcdef", "deadbeefcafe0123456789abcdef"},
		{"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"mac 00:1a:2b:3c:4d:5e", "mac 00:1a:2b:3c:4d:5e"},
		{"1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7:8:9"},
		{"1:2:3:4:5:6:7", "1:2:3:4:5:6:7"},
		{"1::2::3", "1::2::3"},
		{":::1", ":::1"},
		{"std::string", "std::string"},
		{"x1:2:3:4:5:6:7:8", "x1:2:3:4:5:6:7:8"},
		{"12345::1", "12345::1"},
		{"[scrubbed]", "[scrubbed]"},
		{"a[1:2]", "a[1:2]"},
		{"1.5s elapsed, 10.0.1 build", "1.5s elapsed, 10.0.1 build"},
		{"uuid 550e8400-e29b-41d4-a716-446655440000", "uuid 550e8400-e29b-41d4-a716-446655440000"},
		{"sid=AbCd_EfGh-1234", "sid=AbCd_EfGh-1234"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := Scrub(tt.in); got != tt.want {
				t.Errorf("Scrub(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
			if got := Scrub(Scrub(tt.in)); got != tt.want {
				t.Errorf("Scrub is not idempotent on %q: %q", tt.in, got)
			}
			got, _ := appendScrubbed([]byte("prefix "), []byte(tt.in))
			if string(got) != "prefix "+tt.want {
				t.Errorf("appendScrubbed(%q) = %q", tt.in, got)
			}
		})
	}
}

// TestScrubGoodFormats holds Snowflake's TestLogScrubberGoodFormats: each
// address alone scrubs to exactly "[scrubbed]". Each is also tried in many
// positions.
func TestScrubGoodFormats(t *testing.T) {
	addrs := []string{
		// IPv4
		"1.2.3.4", "255.255.255.255", "0.0.0.0", "001.002.003.004",
		// IPv4 with port
		"1.2.3.4:55", "255.255.255.255:65535", "1.2.3.4%3A55",
		// IPv6
		"1:2:3:4:c:d:e:f", "1111:2222:3333:4444:CCCC:DDDD:EEEE:FFFF",
		// IPv6 with brackets
		"[1:2:3:4:c:d:e:f]", "[1111:2222:3333:4444:CCCC:DDDD:EEEE:FFFF]",
		// IPv6 with brackets and port
		"[1:2:3:4:c:d:e:f]:55", "[1111:2222:3333:4444:CCCC:DDDD:EEEE:FFFF]:65535",
		// compressed IPv6
		"::f", "::d:e:f", "1:2:3::", "1:2:3::d:e:f", "1:2:3:d:e:f::", "::1:2:3:d:e:f",
		"1111:2222:3333::DDDD:EEEE:FFFF", "::", "::1", "1::",
		// compressed IPv6 with brackets
		"[::d:e:f]", "[1:2:3::]", "[1:2:3::d:e:f]", "[1111:2222:3333::DDDD:EEEE:FFFF]",
		"[1:2:3:4:5:6::8]", "[1::7:8]",
		// compressed IPv6 with brackets and port
		"[1::]:58344", "[::d:e:f]:55", "[1:2:3::]:55", "[1:2:3::d:e:f]:55",
		"[1111:2222:3333::DDDD:EEEE:FFFF]:65535", "[::1]%3A443",
		// IPv4-compatible and IPv4-mapped
		"::255.255.255.255", "::ffff:255.255.255.255", "[::255.255.255.255]",
		"[::ffff:255.255.255.255]", "[::255.255.255.255]:65535",
		"[::ffff:255.255.255.255]:65535", "[::ffff:0:255.255.255.255]",
		"[2001:db8:3:4::192.0.2.33]", "1:2:3:4:5:6:1.2.3.4",
		// URL-encoded separators
		"2001%3Adb8%3A%3A1", "2001%3adb8%3a%3a1", "[2001%3Adb8%3A%3A1]:443",
		"::ffff%3A1.2.3.4",
	}
	positions := []struct{ before, after string }{
		{"", ""},
		{"x ", ""}, {"", " x"}, {"x ", " x"},
		{"(", ")"}, {"{", "}"}, {"<", ">"}, {`"`, `"`}, {"'", "'"},
		{"addr=", ","}, {"client_ip=", "&a=b"}, {"http://", "/path"}, {"wss://relay/?client_ip=", ""},
		{"from ", ": EOF"}, {"to ", "."}, {"\t", "\n"}, {"/", "/"}, {"-", "-"}, {"@", "!"},
		{"%20", "%20"},
	}
	for _, addr := range addrs {
		if got := Scrub(addr); got != Replacement {
			t.Errorf("Scrub(%q) = %q, want %q", addr, got, Replacement)
		}
		for _, pos := range positions {
			in := pos.before + addr + pos.after
			want := pos.before + Replacement + pos.after
			if got := Scrub(in); got != want {
				t.Errorf("Scrub(%q) = %q, want %q", in, got, want)
			}
		}
	}
}

// TestScrubNetipForms checks every address form Go itself prints.
func TestScrubNetipForms(t *testing.T) {
	for _, s := range []string{
		"0.0.0.0", "127.0.0.1", "192.0.2.1", "255.255.255.255",
		"::", "::1", "2001:db8::1", "2001:db8:0:1:1:1:1:1", "fe80::1:2:3:4", "::ffff:192.0.2.1",
		"1:0:0:0:0:0:0:8", "1::8", "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff",
	} {
		a := netip.MustParseAddr(s)
		for _, text := range []string{
			a.String(), a.StringExpanded(), netip.AddrPortFrom(a, 443).String(),
			"dial tcp " + netip.AddrPortFrom(a, 1).String() + ": i/o timeout",
		} {
			if got := Scrub(text); strings.Contains(got, a.String()) || got == text {
				t.Errorf("Scrub(%q) = %q", text, got)
			}
		}
	}
}

func TestScrubNoAlloc(t *testing.T) {
	line := "2024/01/02 15:04:05 proxy: broker poll ok, sid=AbCdEf, nat=restricted, 3 clients, a=fingerprint:sha-256 33:B6:FA:F6"
	if allocs := testing.AllocsPerRun(100, func() { _ = Scrub(line) }); allocs != 0 {
		t.Errorf("Scrub of a line without addresses allocates %v times", allocs)
	}
}

func TestScrubLinear(t *testing.T) {
	// Inputs that would make a backtracking matcher slow must be scanned
	// in one pass; this test checks behaviour (no panic, output
	// unchanged), speed is covered by the benchmarks.
	for _, in := range []string{
		strings.Repeat("1:", 50000),
		strings.Repeat("1.", 50000),
		strings.Repeat(" 1:2:3:4:5:6:7", 10000),
		strings.Repeat("[1:2:3:4:5:6:7%", 10000),
		strings.Repeat("%3A", 30000),
	} {
		if got := Scrub(in); got != in {
			t.Errorf("Scrub changed a %d-byte non-address input", len(in))
		}
	}
}

const (
	benchLineClean = "2024/01/02 15:04:05 proxy: copy loop ended: sent 123456 bytes, received 7890 bytes, relay wss://snowflake.torproject.net/ nat=restricted"
	benchLineAddr  = "2024/01/02 15:04:05 http: TLS handshake error from 129.97.208.23:38310: EOF; dial tcp [2001:db8::1]:443: connection refused"
)

func BenchmarkScrub(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"clean", benchLineClean},
		{"addresses", benchLineAddr},
		{"fingerprint", "a=fingerprint:sha-256 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A:D9:EB:23:34:B2:30:E9:1B:2A:A6:A9:E0:44:72:CC:74"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bc.line)))
			for b.Loop() {
				_ = Scrub(bc.line)
			}
		})
	}
}

func TestMaybeStart(t *testing.T) {
	for c := 0; c < 256; c++ {
		want := isHex(byte(c)) || c == ':' || c == '%' || c == '['
		if got := maybeStart(byte(c)); got != want {
			t.Errorf("maybeStart(%#x) = %v, want %v", c, got, want)
		}
	}
}
