package ipcount

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/broker/internal/event"
)

// readLines returns each category's lines, keyed by category.
func readLines(t *testing.T, prefix string) map[string][]line {
	t.Helper()
	out := map[string][]line{}
	for _, name := range categories {
		matches, err := filepath.Glob(prefix + "-" + name + "-*.log")
		if err != nil || len(matches) != 1 {
			t.Fatalf("%s: files %v, %v", name, matches, err)
		}
		f, err := os.Open(matches[0])
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var l line
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				t.Fatalf("%s: %q: %v", name, sc.Text(), err)
			}
			out[name] = append(out[name], l)
		}
		f.Close()
	}
	return out
}

func TestCounter(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "ips")
	c, err := New(Config{Prefix: prefix, MaxAddrs: 20})
	if err != nil {
		t.Fatal(err)
	}
	poll := func(addr, nat, typ string) event.Proxy {
		return event.Proxy{Addr: netip.MustParseAddr(addr), NAT: nat, Type: typ}
	}
	// 9 distinct unrestricted standalone proxies, each polling twice (one
	// as a mapped IPv4 address), and one browser proxy refused for its
	// pattern.
	for i := range 9 {
		a := netip.AddrFrom4([4]byte{192, 0, 2, byte(i)})
		c.ProxyPollStarted(poll(a.String(), "unrestricted", "standalone"))
		c.ProxyPollStarted(poll(netip.AddrFrom16(a.As16()).String(), "unrestricted", "standalone"))
	}
	c.ProxyPollRejected(poll("2001:db8::1", "restricted", "webext"))
	c.ProxyPollStarted(poll("2001:db8::2", "unknown", "iptproxy"))
	c.ProxyPollStarted(poll("2001:db8::3", "unknown", "unknown"))
	// Past MaxAddrs the count saturates.
	for i := range 30 {
		c.ProxyPollStarted(poll(netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String(), "unknown", "badge"))
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	// The second interval starts empty.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Run(ctx); err != nil {
		t.Fatal(err)
	}
	got := readLines(t, prefix)
	want := map[string][2]int{ // first interval's count, second's
		"unrestricted": {16, 0}, "restricted": {24, 0}, "standalone": {16, 0},
		"browser": {24, 0}, "mobile": {8, 0}, "unknown": {8, 0},
	}
	for name, w := range want {
		ls := got[name]
		if len(ls) != 2 || ls[0].Count != w[0] || ls[1].Count != w[1] {
			t.Errorf("%s: %+v, want counts %v", name, ls, w)
		}
	}
	if !got["browser"][0].Saturated || !got["restricted"][0].Saturated || got["standalone"][0].Saturated {
		t.Errorf("saturation: %+v", got)
	}
	// No address, in any form, reaches the files.
	for name := range want {
		matches, _ := filepath.Glob(prefix + "-" + name + "-*.log")
		b, _ := os.ReadFile(matches[0])
		if strings.Contains(string(b), "192.0.2") || strings.Contains(string(b), "2001:db8") {
			t.Errorf("%s holds an address: %s", name, b)
		}
	}
}

func TestConfig(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, errInvalidConfig) {
		t.Errorf("no prefix: %v", err)
	}
	if _, err := New(Config{Prefix: filepath.Join(t.TempDir(), "x"), Interval: 1}); !errors.Is(err, errInvalidConfig) {
		t.Errorf("1ns interval: %v", err)
	}
	if _, err := New(Config{Prefix: filepath.Join(t.TempDir(), "missing", "x")}); err == nil {
		t.Error("missing directory accepted")
	}
}
