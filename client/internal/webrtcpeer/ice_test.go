package webrtcpeer

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/pion/webrtc/v5"
)

func TestParseICEServer(t *testing.T) {
	tests := []struct {
		in, url, hostport string
	}{
		{in: "stun:stun.ekiga.net", url: "stun:stun.ekiga.net:3478", hostport: "stun.ekiga.net:3478"},
		{in: "stun:stun.l.google.com:19302", url: "stun:stun.l.google.com:19302", hostport: "stun.l.google.com:19302"},
		{in: " stun:192.0.2.1:3479 ", url: "stun:192.0.2.1:3479", hostport: "192.0.2.1:3479"},
		{in: "stun:[2001:db8::1]:3478", url: "stun:[2001:db8::1]:3478", hostport: "[2001:db8::1]:3478"},
		{in: "stun:2001:db8::1", url: "stun:[2001:db8::1]:3478", hostport: "[2001:db8::1]:3478"},
		{in: "turn:turn.test:3478"},
		{in: "turn:u:p@turn.test", url: "turn:u:p@turn.test:3478"},
		{in: "turn:u%40x:p%2Cq%3A@192.0.2.1:80?transport=tcp", url: "turn:u%40x:p%2Cq%3A@192.0.2.1:80?transport=tcp"},
		{in: "turns:user:secret@turn.test:443?transport=tcp", url: "turns:user:secret@turn.test:443?transport=tcp"},
		{in: "turns:user:secret@turn.test", url: "turns:user:secret@turn.test:5349"},
		{in: "turn:u:@turn.test"},
		{in: "turn::p@turn.test"},
		{in: "turn:u:p@turn.test?transport=sctp"},
		{in: "turns:u:p@turn.test?transport=udp"},
		{in: "turn:u:p@turn.test/x"},
		{in: "turn:u:p@"},
		{in: "stuns:stun.test"},
		{in: "stun.test"},
		{in: "stun:"},
		{in: "stun:stun.test/path"},
		{in: "stun:stun.test?transport=udp"},
		{in: "stun:user@stun.test"},
		{in: "stun:stun.test:0"},
		{in: "stun:stun.test:65536"},
		{in: "stun:stun.test:x"},
		{in: "https://stun.test/"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			u, hp, err := ParseICEServer(tt.in)
			if tt.url == "" {
				if !errors.Is(err, ErrICEServer) {
					t.Fatalf("ParseICEServer(%q) = %q, %v; want ErrICEServer", tt.in, u, err)
				}
				return
			}
			if strings.HasPrefix(tt.in, "turn") && err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), ":p@")) {
				t.Fatalf("error shows the credentials: %v", err)
			}
			if err != nil || u != tt.url || hp != tt.hostport {
				t.Fatalf("ParseICEServer(%q) = %q, %q, %v; want %q, %q", tt.in, u, hp, err, tt.url, tt.hostport)
			}
		})
	}
}

func TestParseICEServers(t *testing.T) {
	servers, hps, skipped := ParseICEServers([]string{"stun:a.test", "turn:b.test", "turn:u:secret@t.test?transport=x", "", "stun:c.test:1", "turn:u:p@t.test?transport=tcp", "stun:d.test", "stun:e.test"})
	if len(skipped) != 2 || skipped[0] != `"turn:b.test"` || skipped[1] != `"turn:[credentials]@t.test?transport=x"` {
		t.Errorf("skipped %q", skipped)
	}
	// Four valid STUN servers: half are kept (Snowflake's rule); the TURN
	// server is kept, last.
	turn := webrtc.ICEServer{URLs: []string{"turn:t.test:3478?transport=tcp"}, Username: "u", Credential: "p"}
	if len(servers) != 3 || len(hps) != 2 || !reflect.DeepEqual(servers[2], turn) {
		t.Fatalf("kept %+v", servers)
	}
	for i := range hps {
		if !reflect.DeepEqual(servers[i].URLs, []string{"stun:" + hps[i]}) {
			t.Errorf("server %+v and host %q disagree", servers[i], hps[i])
		}
	}
	servers, _, _ = ParseICEServers([]string{"stun:a.test", "stun:b.test"})
	if len(servers) != 2 {
		t.Errorf("two servers: kept %+v", servers)
	}
	servers, _, _ = ParseICEServers([]string{"stun:a.test", "stun:b.test", "stun:c.test"})
	if len(servers) != 2 {
		t.Errorf("three servers: kept %+v, want 2", servers)
	}
}

func FuzzParseICEServer(f *testing.F) {
	for _, s := range []string{"stun:stun.ekiga.net", "stun:[::1]:3478", "turn:x", "stun:a:b:c", "stun:\x00", "turn:u:p@h:1?transport=tcp", "turns:a%3A:b%40@[::1]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u, hp, err := ParseICEServer(s)
		if err != nil {
			return
		}
		if hp == "" {
			// TURN: the canonical form parses to itself too, and pion's
			// form carries the credentials apart.
			if srv := iceServer(u); strings.Contains(srv.URLs[0], "@") || srv.Username == "" || srv.Credential == "" {
				t.Fatalf("iceServer(%q) = %+v", u, srv)
			}
		} else if u != "stun:"+hp || strings.ContainsAny(hp, "/?#@ \t") {
			t.Fatalf("ParseICEServer(%q) = %q, %q", s, u, hp)
		}
		// Parsing the result again gives the same result.
		u2, hp2, err := ParseICEServer(u)
		if err != nil || u2 != u || hp2 != hp {
			t.Fatalf("not idempotent: %q -> %q -> %q, %v", s, u, u2, err)
		}
	})
}
