package socks5udp

import (
	"bytes"
	"errors"
	"net/netip"
	"strings"
	"testing"
)

func TestAppendHeader(t *testing.T) {
	tests := []struct {
		name string
		ip   netip.Addr
		host string
		port uint16
		want []byte
		err  error
	}{
		{"ipv4", netip.MustParseAddr("127.0.0.1"), "", 3478,
			[]byte{0, 0, 0, 1, 127, 0, 0, 1, 0x0d, 0x96}, nil},
		{"ipv6", netip.MustParseAddr("::1"), "", 443,
			[]byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x01, 0xbb}, nil},
		{"ipv4-mapped stays ipv6", netip.MustParseAddr("::ffff:10.1.2.3"), "", 1,
			[]byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 1, 2, 3, 0, 1}, nil},
		{"name", netip.Addr{}, "stun.example", 3478,
			append(append([]byte{0, 0, 0, 3, 12}, "stun.example"...), 0x0d, 0x96), nil},
		{"empty name", netip.Addr{}, "", 1, nil, ErrAddress},
		{"long name", netip.Addr{}, strings.Repeat("a", 256), 1, nil, ErrAddress},
		{"name with space", netip.Addr{}, "a b", 1, nil, ErrAddress},
		{"zone", netip.MustParseAddr("fe80::1%eth0"), "", 1, nil, ErrAddress},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := appendHeader(nil, tt.ip, tt.host, tt.port)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if tt.err == nil && !bytes.Equal(got, tt.want) {
				t.Errorf("header = % x, want % x", got, tt.want)
			}
		})
	}
}

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name     string
		in       []byte
		ok       bool
		frag     byte
		ip       string
		host     string
		port     uint16
		consumed int
	}{
		{"ipv4 with payload", []byte{0, 0, 0, 1, 192, 0, 2, 1, 0, 80, 'h', 'i'}, true, 0, "192.0.2.1", "", 80, 10},
		{"ipv6", []byte{0, 0, 0, 4, 0x20, 1, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0x12, 0x34}, true, 0, "2001:db8::1", "", 0x1234, 22},
		{"name", []byte{0, 0, 0, 3, 3, 'a', '.', 'b', 0, 53, 'x'}, true, 0, "", "a.b", 53, 10},
		{"fragment number is returned", []byte{0, 0, 5, 1, 127, 0, 0, 1, 0, 1}, true, 5, "127.0.0.1", "", 1, 10},
		{"empty", nil, false, 0, "", "", 0, 0},
		{"three bytes", []byte{0, 0, 0}, false, 0, "", "", 0, 0},
		{"rsv not zero", []byte{0, 1, 0, 1, 127, 0, 0, 1, 0, 1}, false, 0, "", "", 0, 0},
		{"stun binding request", []byte{0x00, 0x01, 0x00, 0x08, 0x21, 0x12, 0xa4, 0x42}, false, 0, "", "", 0, 0},
		{"unknown atyp", []byte{0, 0, 0, 2, 127, 0, 0, 1, 0, 1}, false, 0, "", "", 0, 0},
		{"short ipv4", []byte{0, 0, 0, 1, 127, 0, 0, 1, 0}, false, 0, "", "", 0, 0},
		{"short ipv6", []byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}, false, 0, "", "", 0, 0},
		{"empty name", []byte{0, 0, 0, 3, 0, 0, 1}, false, 0, "", "", 0, 0},
		{"name longer than datagram", []byte{0, 0, 0, 3, 9, 'a', 0, 1}, false, 0, "", "", 0, 0},
		{"no name length", []byte{0, 0, 0, 3}, false, 0, "", "", 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, n, err := parseHeader(tt.in)
			if (err == nil) != tt.ok {
				t.Fatalf("err = %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok {
				if !errors.Is(err, errMalformed) {
					t.Errorf("err = %v, want errMalformed", err)
				}
				return
			}
			if n != tt.consumed || h.frag != tt.frag || h.port != tt.port || string(h.name) != tt.host {
				t.Errorf("got %+v (%d bytes), want frag %d port %d name %q (%d bytes)", h, n, tt.frag, tt.port, tt.host, tt.consumed)
			}
			if tt.ip != "" && h.ip != netip.MustParseAddr(tt.ip) {
				t.Errorf("ip = %v, want %v", h.ip, tt.ip)
			}
			if tt.ip == "" && h.ip.IsValid() {
				t.Errorf("ip = %v for a name", h.ip)
			}
		})
	}
}

// FuzzParseHeader checks that no input makes the decoder panic or read past
// its input, and that what it accepts encodes back to the same bytes.
func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 127, 0, 0, 1, 0x0d, 0x96, 1, 2, 3})
	f.Add([]byte{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0})
	f.Add(append(append([]byte{0, 0, 0, 3, 9}, "localhost"...), 0, 53))
	f.Add([]byte{0, 0, 1, 1, 127, 0, 0, 1, 0, 1})
	f.Add([]byte{0, 0, 0, 3, 255})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, n, err := parseHeader(b)
		if err != nil {
			return
		}
		if n > len(b) || n < 8 {
			t.Fatalf("consumed %d of %d bytes", n, len(b))
		}
		if h.frag != b[2] {
			t.Fatalf("frag %d, byte %d", h.frag, b[2])
		}
		name := string(h.name)
		if !h.ip.IsValid() && checkName(name) != nil {
			return // names are accepted as sent; only printable ones re-encode
		}
		again, err := appendHeader(nil, h.ip, name, h.port)
		if err != nil {
			t.Fatalf("re-encode %+v: %v", h, err)
		}
		again[2] = h.frag
		if !bytes.Equal(again, b[:n]) {
			t.Fatalf("re-encoded % x, input % x", again, b[:n])
		}
	})
}
