package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"

	"github.com/flurrypt/flurry/common/relaypattern"
)

// fakeResolver maps host names to addresses; unknown names fail.
type fakeResolver map[string][]string

func (f fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	list, ok := f[host]
	if !ok {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	var out []netip.Addr
	for _, s := range list {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func testPolicy(t testing.TB, pattern string, allowPrivate, allowNonTLS bool, r Resolver) relayPolicy {
	t.Helper()
	rule, ports, err := splitRelayPattern(pattern)
	if err != nil {
		t.Fatalf("splitRelayPattern(%q): %v", pattern, err)
	}
	p, err := relaypattern.Parse(rule)
	if err != nil {
		t.Fatalf("Parse(%q): %v", rule, err)
	}
	return relayPolicy{pattern: p, ports: ports, allowPrivate: allowPrivate, allowNonTLS: allowNonTLS, resolver: r}
}

// TestRelayURLSnowflakeVectors runs every vector of Snowflake v2.14.1's
// relay URL test (Snowflake's checkIsRelayURLAcceptable) through the checks that need no
// DNS, which are Snowflake's whole check.
func TestRelayURLSnowflakeVectors(t *testing.T) {
	tests := []struct {
		pattern              string
		allowPrivate, nonTLS bool
		url                  string
		ok                   bool
	}{
		{"snowflake.torproject.net$", false, false, "wss://snowflake.torproject.net", true},
		{"snowflake.torproject.net$", false, false, "wss://imaginary-01-snowflake.torproject.net", true},
		{"snowflake.torproject.net$", false, false, "wss://imaginary-aaa-snowflake.torproject.net", true},
		{"snowflake.torproject.net$", false, false, "wss://imaginary-aaa-snowflake.faketorproject.net", false},
		{"^torproject.net$", false, false, "wss://faketorproject.net", false},
		{"torproject.net$", false, false, "wss://faketorproject.net", true},
		{"snowflake.torproject.net$", false, false, "ws://snowflake.torproject.net", false},
		{"snowflake.torproject.net$", false, true, "ws://snowflake.torproject.net", true},
		{"snowflake.torproject.net$", false, false, "wss://evil.com/snowflake.torproject.net", false},
		{"snowflake.torproject.net$", false, false, "wss://evil.com/?test=snowflake.torproject.net", false},
		{"^1.1.1.1$", false, true, "ws://1.1.1.1/test?test=test#test", true},
		{"^1.1.1.1$", false, true, "ws://231.1.1.1/test?test=test#test", false},
		// Snowflake accepts 231.1.1.1 (multicast) here; Flurry counts
		// multicast as local, so it needs the private flag (next line).
		{"1.1.1.1$", false, true, "ws://231.1.1.1/test?test=test#test", false},
		{"1.1.1.1$", true, true, "ws://231.1.1.1/test?test=test#test", true},
		{"$", false, true, "ws://192.168.1.1", false},
		{"$", false, true, "ws://127.0.0.1", false},
		{"$", false, true, "ws://[fc00::]/", false},
		{"$", false, true, "ws://[::1]/", false},
		{"$", false, true, "ws://0.0.0.0/", false},
		{"$", false, true, "ws://169.254.1.1/", false},
		{"$", false, true, "ws://100.111.1.1/", false},
		{"192.168.1.100$", true, true, "ws://192.168.1.100/test?test=test", true},
		{"localhost$", true, true, "ws://localhost/test?test=test", true},
		{"::1$", true, true, "ws://[::1]/test?test=test", true},
		{"255.255.255.255$", true, true, "ws://255.255.255.255/test?test=test", true},
		// Snowflake accepts any port; Flurry's pattern must name it.
		{"^snowflake.torproject.net$", false, false, "wss://snowflake.torproject.net:8080/test?test=test#test", false},
		{"^snowflake.torproject.net:8080$", false, false, "wss://snowflake.torproject.net:8080/test?test=test#test", true},
		{"$", false, false, "wss://any.com/test?test=test#test", true},
		{"$", false, false, "wss://1.1.1.1/test?test=test#test", true},
		{"$", false, true, "snowflake.torproject.net", false},
		{"$", false, true, "//snowflake.torproject.net", false},
		{"$", false, true, "/path", false},
		{"$", false, true, "wss://snowflake.torproject .net", false},
		{"$", false, true, "wss://😀", true},
		{"$", false, true, "wss://пример.рф", true},
		{"snowflake.torproject.net$", false, false, "https://snowflake.torproject.net", false},
		{"snowflake.torproject.net$", false, false, "ftp://snowflake.torproject.net", false},
		{"snowflake.torproject.net$", false, true, "https://snowflake.torproject.net", false},
		{"snowflake.torproject.net$", false, true, "ftp://snowflake.torproject.net", false},
		// Flurry additions.
		{"$", false, false, "wss://[::ffff:127.0.0.1]/", false},
		{"$", false, false, "wss://[fe80::1%25eth0]/", false},
		{"$", false, false, "wss:", false},
		{"$", false, false, "wss:opaque", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.url, func(t *testing.T) {
			pol := testPolicy(t, tt.pattern, tt.allowPrivate, tt.nonTLS, fakeResolver{})
			_, err := pol.checkURL(tt.url)
			if (err == nil) != tt.ok {
				t.Errorf("checkURL(%q) with pattern %q, private %v, non-TLS %v = %v, want ok %v",
					tt.url, tt.pattern, tt.allowPrivate, tt.nonTLS, err, tt.ok)
			}
		})
	}
}

// TestRelayURLResolved checks what Snowflake does not (item 23): names are
// resolved and every address must be public.
func TestRelayURLResolved(t *testing.T) {
	res := fakeResolver{
		"relay.example":     {"1.2.3.10"},
		"dual.example":      {"1.2.3.10", "2606:4700::10"},
		"loop.example":      {"127.0.0.1"},
		"loop6.example":     {"::1"},
		"mixed.example":     {"1.2.3.10", "10.0.0.1"},
		"private.example":   {"192.168.0.7"},
		"cgnat.example":     {"100.64.3.3"},
		"mapped.example":    {"::ffff:10.1.1.1"},
		"localhost.example": {"127.0.0.1", "::1"},
	}
	tests := []struct {
		url          string
		allowPrivate bool
		want         error
	}{
		{"wss://relay.example/", false, nil},
		{"wss://dual.example/", false, nil},
		{"wss://loop.example/", false, ErrRelayPrivate},
		{"wss://loop6.example/", false, ErrRelayPrivate},
		{"wss://mixed.example/", false, ErrRelayPrivate},
		{"wss://private.example/x", false, ErrRelayPrivate},
		{"wss://relay.example:8443/", false, ErrRelayPort},
		{"wss://cgnat.example/", false, ErrRelayPrivate},
		{"wss://mapped.example/", false, ErrRelayPrivate},
		{"wss://localhost.example/", true, nil},
		{"wss://loop.example/", true, nil},
		{"wss://unknown.example/", false, ErrRelayResolve},
		{"wss://unknown.example/", true, ErrRelayResolve},
		{"wss://1.2.3.9/", false, ErrRelayHostname}, // literal IPs must match the pattern too
		{"wss://10.0.0.1/", false, ErrRelayPrivate},
		{"ws://relay.example/", false, ErrRelayScheme},
		{"wss://relay.other/", false, ErrRelayHostname},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			pol := testPolicy(t, "example$", tt.allowPrivate, false, res)
			_, err := pol.check(context.Background(), tt.url)
			if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
				t.Errorf("check(%q) = %v, want %v", tt.url, err, tt.want)
			}
		})
	}
}

// TestRelayDialRechecks makes sure the dialer itself refuses private
// addresses, so a name that changes between check and dial cannot reach
// one.
func TestRelayDialRechecks(t *testing.T) {
	res := fakeResolver{"relay.example": {"10.9.9.9"}}
	dialed := false
	d := &relayDialer{
		policy: testPolicy(t, "example$", false, false, res),
		netDial: func(context.Context, string, string) (net.Conn, error) {
			dialed = true
			return nil, errors.New("must not dial")
		},
	}
	_, err := d.dialChecked(context.Background(), "tcp", "relay.example:443")
	if !errors.Is(err, ErrRelayPrivate) || dialed {
		t.Fatalf("dialChecked = %v (dialed %v), want ErrRelayPrivate without dialing", err, dialed)
	}
	res["relay.example"] = []string{"1.2.3.1", "1.2.3.2"}
	var addrs []string
	d.netDial = func(_ context.Context, _, addr string) (net.Conn, error) {
		addrs = append(addrs, addr)
		return nil, errors.New("refused")
	}
	if _, err := d.dialChecked(context.Background(), "tcp", "relay.example:443"); err == nil {
		t.Fatal("dialChecked succeeded with failing dials")
	}
	if len(addrs) != 2 || addrs[0] != "1.2.3.1:443" || addrs[1] != "1.2.3.2:443" {
		t.Errorf("dialed %v, want both checked addresses with the port", addrs)
	}
}

func TestParsePortRange(t *testing.T) {
	tests := []struct {
		in     string
		lo, hi uint16
		ok     bool
	}{
		{"", 0, 0, true},
		{"10000:20000", 10000, 20000, true},
		{"5:5", 5, 5, true},
		{"0:10", 0, 0, false},
		{"10:0", 0, 0, false},
		{"20:10", 0, 0, false},
		{"10", 0, 0, false},
		{"a:b", 0, 0, false},
		{"1:70000", 0, 0, false},
	}
	for _, tt := range tests {
		lo, hi, err := ParsePortRange(tt.in)
		if (err == nil) != tt.ok || lo != tt.lo || hi != tt.hi {
			t.Errorf("ParsePortRange(%q) = %d, %d, %v", tt.in, lo, hi, err)
		}
	}
}
