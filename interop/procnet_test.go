package interop

import (
	"net/netip"
	"testing"
)

func TestProcNetAddr(t *testing.T) {
	for in, want := range map[string]string{
		"017100CB:7B8D":                         "203.0.113.1:31629",
		"0100007F:0050":                         "127.0.0.1:80",
		"0000000000000000FFFF0000017100CB:01BB": "203.0.113.1:443",
		"B80D0120000000000000000001000000:0016": "[2001:db8::1]:22",
	} {
		got, ok := procNetAddr(in)
		if !ok || got != netip.MustParseAddrPort(want) {
			t.Errorf("procNetAddr(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "017100CB", "0171:0050", "017100CB:XYZ", "017100CB:10000"} {
		if got, ok := procNetAddr(bad); ok {
			t.Errorf("procNetAddr(%q) = %v; want an error", bad, got)
		}
	}
}
