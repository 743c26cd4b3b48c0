package proxy

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestWarnings: New warns of an ephemeral port range narrower than twice
// the capacity (10 clients assumed when unlimited), as docs/proxy.md says,
// and of a proxy that cannot learn its public address.
func TestWarnings(t *testing.T) {
	for _, tt := range []struct {
		name             string
		min, max         uint16
		capacity         int
		stun             []string
		portWarn, noSTUN bool
	}{
		{"1 port, 1 client", 40000, 40000, 1, []string{"stun:127.0.0.1:3478"}, true, false},
		{"2 ports, 1 client", 40000, 40001, 1, []string{"stun:127.0.0.1:3478"}, false, false},
		{"19 ports, unlimited", 40000, 40018, 0, []string{"stun:127.0.0.1:3478"}, true, false},
		{"20 ports, unlimited", 40000, 40019, 0, []string{"stun:127.0.0.1:3478"}, false, false},
		{"39 ports, 20 clients", 40000, 40038, 20, []string{"stun:127.0.0.1:3478"}, true, false},
		{"40 ports, 20 clients", 40000, 40039, 20, []string{"stun:127.0.0.1:3478"}, false, false},
		{"no STUN", 0, 0, 0, nil, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log bytes.Buffer
			_, err := New(Config{
				BrokerURL: "https://b.example/", RelayURL: "wss://relay.example/",
				PortMin: tt.min, PortMax: tt.max, Capacity: tt.capacity, STUNURLs: tt.stun,
				Logger: slog.New(slog.NewTextHandler(&log, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Contains(log.String(), "ephemeral port range may be too narrow"); got != tt.portWarn {
				t.Errorf("port range warning %v, want %v:\n%s", got, tt.portWarn, log.String())
			}
			if got := strings.Contains(log.String(), "no STUN server"); got != tt.noSTUN {
				t.Errorf("STUN warning %v, want %v:\n%s", got, tt.noSTUN, log.String())
			}
		})
	}
}
