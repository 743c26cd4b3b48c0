package clientaddr

import (
	"net/http"
	"net/netip"
	"testing"
)

func TestAddr(t *testing.T) {
	trusted := New([]netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("2001:db8:cd0::/48"),
	})
	tests := []struct {
		name     string
		r        *Resolver
		remote   string
		fwd, xff []string
		want     string
	}{
		{"plain v4", trusted, "192.0.2.1:1234", nil, nil, "192.0.2.1"},
		{"plain v6", trusted, "[2001:db8::1]:443", nil, nil, "2001:db8::1"},
		{"mapped", trusted, "[::ffff:192.0.2.9]:1", nil, nil, "192.0.2.9"},
		{"untrusted peer ignores XFF", trusted, "192.0.2.1:1", nil, []string{"198.51.100.7"}, "192.0.2.1"},
		{"untrusted peer ignores Forwarded", trusted, "192.0.2.1:1", []string{"for=198.51.100.7"}, nil, "192.0.2.1"},
		{"zero resolver ignores headers", New(nil), "10.1.1.1:1", nil, []string{"198.51.100.7"}, "10.1.1.1"},
		{"trusted XFF", trusted, "10.0.0.1:1", nil, []string{"198.51.100.7"}, "198.51.100.7"},
		{"rightmost untrusted wins", trusted, "10.0.0.1:1", nil, []string{"203.0.113.66, 198.51.100.7, 10.2.2.2"}, "198.51.100.7"},
		{"several header lines", trusted, "10.0.0.1:1", nil, []string{"203.0.113.66", "198.51.100.7"}, "198.51.100.7"},
		{"all trusted", trusted, "10.0.0.1:1", nil, []string{"10.9.9.9, 10.3.3.3"}, "10.9.9.9"},
		{"garbage stops at last trusted", trusted, "10.0.0.1:1", nil, []string{"198.51.100.7, bogus, 10.3.3.3"}, "10.3.3.3"},
		{"no header", trusted, "10.0.0.1:1", nil, nil, "10.0.0.1"},
		{"Forwarded", trusted, "10.0.0.1:1", []string{`for=192.0.2.60;proto=http;by=203.0.113.43`}, nil, "192.0.2.60"},
		{"Forwarded v6 quoted", trusted, "10.0.0.1:1", []string{`for="[2001:db8:cafe::17]:4711"`}, nil, "2001:db8:cafe::17"},
		{"Forwarded wins over XFF", trusted, "10.0.0.1:1", []string{"for=192.0.2.60"}, []string{"198.51.100.7"}, "192.0.2.60"},
		{"Forwarded chain", trusted, "[2001:db8:cd0::1]:1", []string{"for=192.0.2.60, for=10.4.4.4"}, nil, "192.0.2.60"},
		{"Forwarded unknown", trusted, "10.0.0.1:1", []string{"for=unknown"}, nil, "10.0.0.1"},
		{"Forwarded v4 with port", trusted, "10.0.0.1:1", []string{`For="192.0.2.61:88"`}, nil, "192.0.2.61"},
		{"bad remote", trusted, "nonsense", nil, nil, "invalid IP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &http.Request{RemoteAddr: tt.remote, Header: http.Header{}}
			for _, v := range tt.fwd {
				req.Header.Add("Forwarded", v)
			}
			for _, v := range tt.xff {
				req.Header.Add("X-Forwarded-For", v)
			}
			if got := tt.r.Addr(req).String(); got != tt.want {
				t.Errorf("Addr = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestMaxHops(t *testing.T) {
	r := New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	req := &http.Request{RemoteAddr: "10.0.0.1:1", Header: http.Header{}}
	req.Header.Add("X-Forwarded-For", "198.51.100.7")
	for range 100 {
		req.Header.Add("X-Forwarded-For", "10.0.0.2")
	}
	if got := r.Addr(req).String(); got != "10.0.0.2" {
		t.Errorf("Addr = %s, want the last trusted hop within the bound", got)
	}
}

func TestIgnoredForwarding(t *testing.T) {
	r := New([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	tests := []struct {
		name, remote, header string
		want                 bool
	}{
		{"untrusted XFF", "127.0.0.1:1", "X-Forwarded-For", true},
		{"untrusted Forwarded", "192.168.1.1:1", "Forwarded", true},
		{"trusted peer", "10.0.0.1:1", "X-Forwarded-For", false},
		{"no header", "127.0.0.1:1", "", false},
		{"other header", "127.0.0.1:1", "X-Real-Ip", false},
		{"bad remote", "nonsense", "X-Forwarded-For", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := &http.Request{RemoteAddr: tt.remote, Header: http.Header{}}
			if tt.header != "" {
				req.Header.Add(tt.header, "198.51.100.7")
			}
			if got := r.IgnoredForwarding(req); got != tt.want {
				t.Errorf("IgnoredForwarding = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParsePrefixes(t *testing.T) {
	got, err := ParsePrefixes("x", " 10.0.0.0/8, 192.0.2.7,2001:db8::/32 ,::ffff:198.51.100.1,")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32", "198.51.100.1/32"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i].String() != want[i] {
			t.Errorf("prefix %d = %s, want %s", i, got[i], want[i])
		}
	}
	if _, err := ParsePrefixes("x", "10.0.0.0/33"); err == nil {
		t.Error("bad CIDR accepted")
	}
}
