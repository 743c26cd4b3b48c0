package proxy

import (
	"errors"
	"testing"
)

func TestSplitRelayPattern(t *testing.T) {
	tests := []struct {
		rule, host, ports string
		ok                bool
	}{
		{"", "", "default (443)", true},
		{"$", "$", "default (443)", true},
		{"snowflake.torproject.net$", "snowflake.torproject.net$", "default (443)", true},
		{"^relay.example:8443$", "^relay.example$", "8443", true},
		{"relay.example:443,8443,443$", "relay.example$", "443,8443", true},
		{"^127.0.0.1:*$", "^127.0.0.1$", "any", true},
		{"^[2001:db8::1]:8443$", "^2001:db8::1$", "8443", true},
		{"::1$", "::1$", "default (443)", true}, // IPv6 without brackets: no ports
		{"relay.example:$", "relay.example:$", "default (443)", true},
		{"relay.example:0$", "", "", false},
		{"relay.example:65536$", "", "", false},
		{"relay.example:1,,2$", "", "", false},
		{"relay.example:1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17$", "", "", false},
	}
	for _, tt := range tests {
		host, ps, err := splitRelayPattern(tt.rule)
		if (err == nil) != tt.ok {
			t.Errorf("splitRelayPattern(%q) error %v, want ok %v", tt.rule, err, tt.ok)
			continue
		}
		if tt.ok && (host != tt.host || ps.String() != tt.ports) {
			t.Errorf("splitRelayPattern(%q) = %q, %s; want %q, %s", tt.rule, host, ps, tt.host, tt.ports)
		}
	}
}

// TestRelayPorts: a pattern without ports allows only the scheme's
// default port; listed ports allow those; ":*" any.
func TestRelayPorts(t *testing.T) {
	tests := []struct {
		pattern, url string
		want         error
	}{
		{"relay.example$", "wss://relay.example/", nil},
		{"relay.example$", "wss://relay.example:443/", nil},
		{"relay.example$", "wss://relay.example:8443/", ErrRelayPort},
		{"relay.example$", "wss://relay.example:22/", ErrRelayPort},
		{"relay.example$", "ws://relay.example/", nil},
		{"relay.example$", "ws://relay.example:443/", ErrRelayPort},
		{"relay.example:8443$", "wss://relay.example:8443/", nil},
		{"relay.example:8443$", "wss://relay.example/", ErrRelayPort},
		{"relay.example:443,8443$", "wss://a.relay.example/", nil},
		{"relay.example:443,8443$", "wss://relay.example:8443/", nil},
		{"relay.example:443,8443$", "wss://relay.example:9000/", ErrRelayPort},
		{"relay.example:*$", "wss://relay.example:9000/", nil},
		{"relay.example:*$", "wss://other.example:9000/", ErrRelayHostname},
		{"relay.example:*$", "wss://relay.example:0/", ErrRelayURL},
		{"^[2606:4700::1]:8443$", "wss://[2606:4700::1]:8443/", nil},
		{"^[2606:4700::1]:8443$", "wss://[2606:4700::1]/", ErrRelayPort},
	}
	for _, tt := range tests {
		pol := testPolicy(t, tt.pattern, false, true, fakeResolver{})
		_, err := pol.checkURL(tt.url)
		if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
			t.Errorf("pattern %q, checkURL(%q) = %v, want %v", tt.pattern, tt.url, err, tt.want)
		}
	}
}

// TestDefaultRelayRule: without a pattern, the default relay's hostname
// and port are allowed, and only the hostname goes to the broker.
func TestDefaultRelayRule(t *testing.T) {
	tests := []struct{ relay, sent, ports string }{
		{"wss://snowflake.torproject.net/", "snowflake.torproject.net$", "default (443)"},
		{"wss://relay.example:443/", "relay.example$", "default (443)"},
		{"wss://relay.example:8443/", "relay.example$", "8443"},
		{"ws://127.0.0.1:9000/", "127.0.0.1$", "9000"},
		{"wss://[2606:4700::1]:8443/", "2606:4700::1$", "8443"},
	}
	for _, tt := range tests {
		s, err := Config{BrokerURL: "http://b.example/", RelayURL: tt.relay, AllowNonTLSRelay: true, AllowPrivateRelay: true}.settle()
		if err != nil {
			t.Errorf("relay %s: %v", tt.relay, err)
			continue
		}
		if s.AllowedRelayPattern != tt.sent || s.relayPorts.String() != tt.ports {
			t.Errorf("relay %s: pattern %q ports %s, want %q %s", tt.relay, s.AllowedRelayPattern, s.relayPorts, tt.sent, tt.ports)
		}
	}
}

// TestSnowflakeCommandLinePorts: a pattern that names no port still allows
// the port of the operator's own -relay URL (as Snowflake's command lines
// are written), but not other ports on the same host.
func TestSnowflakeCommandLinePorts(t *testing.T) {
	tests := []struct {
		pattern, relay, ports string
	}{
		{"^127.0.0.1$", "ws://127.0.0.1:9000/", "80,9000"},
		{"snowflake.torproject.net$", "wss://snowflake.torproject.net/", "default (443)"},
		{"relay.example$", "wss://relay.example:8443/", "443,8443"},
		{"relay.example:9443$", "wss://relay.example:9443/", "9443"},
	}
	for _, tt := range tests {
		s, err := Config{BrokerURL: "http://b.example/", RelayURL: tt.relay, AllowedRelayPattern: tt.pattern, AllowNonTLSRelay: true, AllowPrivateRelay: true}.settle()
		if err != nil {
			t.Errorf("%s with %s: %v", tt.pattern, tt.relay, err)
			continue
		}
		if got := s.relayPorts.String(); got != tt.ports {
			t.Errorf("%s with %s: ports %s, want %s", tt.pattern, tt.relay, got, tt.ports)
		}
	}
	s, err := Config{BrokerURL: "http://b.example/", RelayURL: "ws://127.0.0.1:9000/", AllowedRelayPattern: "^127.0.0.1$", AllowNonTLSRelay: true, AllowPrivateRelay: true}.settle()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.policy().checkURL("ws://127.0.0.1:9001/"); !errors.Is(err, ErrRelayPort) {
		t.Errorf("another port on the relay's host: %v, want ErrRelayPort", err)
	}
}
