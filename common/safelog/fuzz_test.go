package safelog

import (
	"net/netip"
	"strconv"
	"strings"
	"testing"
)

var scrubSeeds = []string{
	"", "1.2.3.4", "::1", "[::1]:443", "from 129.97.208.23:38310: x", "12:34:56", "1.2.3",
	"a=fingerprint:sha-256 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A:D9:EB:23:34",
	"client_ip=6201%3ac8%3A3004%3A%3A1234", "[fe80::1%eth0]:1", "1:2:3:4:5:6:7:8:9.9.9.9",
	"%201.2.3.4", "::ffff:1.2.3.4", "[scrubbed]", "1.2.3.4:5.6.7.8", "x:1.2.3.4:80:",
}

// FuzzScrub checks that Scrub never panics, is idempotent (its output holds
// no address it would scrub), agrees with the []byte scanner the handler
// uses for byte slices, and leaves text without digits or colons alone.
func FuzzScrub(f *testing.F) {
	for _, s := range scrubSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := Scrub(s)
		if again := Scrub(out); again != out {
			t.Fatalf("not idempotent:\n in    %q\n once  %q\n twice %q", s, out, again)
		}
		b, changed := appendScrubbed(nil, []byte(s))
		if string(b) != out || changed != (out != s) {
			t.Fatalf("[]byte scanner disagrees on %q: %q (changed %v), Scrub %q", s, b, changed, out)
		}
		if !strings.ContainsAny(s, "0123456789:") && out != s {
			t.Fatalf("Scrub(%q) = %q changed text without digits or colons", s, out)
		}
	})
}

// FuzzScrubAddress puts an arbitrary IPv4 or IPv6 address, in every form Go
// prints it, between two spaces inside arbitrary text and checks that it is
// scrubbed and that the text around it is scrubbed exactly as on its own.
func FuzzScrubAddress(f *testing.F) {
	for i, s := range scrubSeeds {
		f.Add(s, scrubSeeds[(i+1)%len(scrubSeeds)], []byte{1, 2, 3, 4}, uint16(i), uint8(i))
		f.Add(s, s, []byte("0123456789abcdef"), uint16(443), uint8(i))
	}
	f.Fuzz(func(t *testing.T, before, after string, raw []byte, port uint16, form uint8) {
		var addr netip.Addr
		switch {
		case len(raw) >= 16:
			addr = netip.AddrFrom16([16]byte(raw[:16]))
		case len(raw) >= 4:
			addr = netip.AddrFrom4([4]byte(raw[:4]))
		default:
			return
		}
		var text string
		switch form % 6 {
		case 0:
			text = addr.String()
		case 1:
			text = addr.StringExpanded()
		case 2:
			text = netip.AddrPortFrom(addr, port).String()
		case 3:
			text = "[" + addr.String() + "]"
		case 4:
			text = strings.ReplaceAll(addr.String(), ":", "%3A")
		case 5:
			text = "[" + addr.StringExpanded() + "]:" + strconv.Itoa(int(port))
		}
		if _, err := netip.ParseAddr(strings.Trim(strings.ReplaceAll(addr.String(), "%3A", ":"), "[]")); err != nil {
			t.Fatalf("bad test address %q", text)
		}
		in := before + " " + text + " " + after
		want := Scrub(before) + " " + Replacement + " " + Scrub(after)
		if got := Scrub(in); got != want {
			t.Fatalf("Scrub(%q)\n got %q\nwant %q", in, got, want)
		}
	})
}
