package broker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveLoopback runs b.Serve on a loopback listener until the test ends
// and returns its address.
func serveLoopback(t *testing.T, b *Broker) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// TestServerLimits checks Serve's limits: a long-poll is not cut by the
// read and write timeouts, a client that never finishes its header is
// disconnected after the header timeout (not held forever), and an
// oversized header is refused.
func TestServerLimits(t *testing.T) {
	const hold = 300 * time.Millisecond
	b, err := New(Config{ProxyHold: hold, ReadHeaderTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	addr := serveLoopback(t, b)

	resp, err := http.Post("http://"+addr+"/proxy", "", strings.NewReader(`{"Sid":"timeouts","Version":"1.3","Type":"standalone","NAT":"unrestricted","AcceptedRelayPattern":""}`))
	if err != nil {
		t.Fatalf("long-poll: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"Status":"no match"`)) {
		t.Errorf("long-poll got %d %q, want no match after the hold", resp.StatusCode, body)
	}

	// Slowloris: half a header, then nothing.
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, "POST /proxy HTTP/1.1\r\nHost: broker\r\n"); err != nil {
		t.Fatal(err)
	}
	// A loose bound far beyond the header timeout, only to catch a hang.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	_, err = io.Copy(io.Discard, c)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("a connection with an unfinished header was still open")
	}

	// A header over the limit.
	c2, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	req := "GET /debug HTTP/1.1\r\nHost: broker\r\nX-Pad: " + strings.Repeat("a", 2*maxHeaderBytes) + "\r\n\r\n"
	go func() { _, _ = io.WriteString(c2, req) }()
	r, err := http.ReadResponse(bufio.NewReader(c2), nil)
	if err != nil {
		t.Fatalf("oversized header: %v", err)
	}
	r.Body.Close()
	if r.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("oversized header got %d, want 431", r.StatusCode)
	}
}

// TestRunMetricsAddr: with MetricsAddr, Run serves /prometheus there and
// not on the public listener, and returns nil when its context ends.
func TestRunMetricsAddr(t *testing.T) {
	free := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	cfg := Config{ListenAddr: free(), MetricsAddr: free()}
	b, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	get := func(addr string) int {
		for range 200 { // until Run listens; a bound against a hang
			resp, err := http.Get("http://" + addr + "/prometheus")
			if err == nil {
				resp.Body.Close()
				return resp.StatusCode
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("nothing listens on %s", addr)
		return 0
	}
	if code := get(cfg.MetricsAddr); code != http.StatusOK {
		t.Errorf("/prometheus on MetricsAddr: %d", code)
	}
	if code := get(cfg.ListenAddr); code != http.StatusNotFound {
		t.Errorf("/prometheus on ListenAddr: %d, want 404", code)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run = %v", err)
	}
}

// TestOpenGeoIP: files that load, files missing at the default paths (a
// warning, no table), and files that must load but do not.
func TestOpenGeoIP(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good4 := write("geoip", "2130706432,2147483647,AA\n")
	good6 := write("geoip6", "::1,::1,V6\n")
	bad := write("bad", "1,2\n")
	missing := filepath.Join(dir, "missing")
	defaults := [2]string{filepath.Join(dir, "default4"), filepath.Join(dir, "default6")}
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	for _, tt := range []struct {
		name     string
		v4, v6   string
		err      string // "" = no error
		tables   bool
		warnings int
	}{
		{"both", good4, good6, "", true, 0},
		{"IPv4 only", good4, "", "", true, 0},
		{"defaults missing", defaults[0], defaults[1], "", false, 2},
		{"one default missing", good4, defaults[1], "", true, 1},
		{"named file missing", missing, good6, "no such file", false, 0},
		{"malformed file", good4, bad, bad + ":1", false, 0},
		{"neither", "", "", "no geoip file given", false, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			logs.Reset()
			db, err := openGeoIP([2]string{tt.v4, tt.v6}, defaults, log)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (db != nil) != tt.tables {
				t.Fatalf("db = %v, want tables: %v", db, tt.tables)
			}
			if n := strings.Count(logs.String(), "level=WARN"); n != tt.warnings {
				t.Errorf("%d warnings, want %d:\n%s", n, tt.warnings, &logs)
			}
		})
	}
}

// TestReload: a changed poll-interval file is taken up; a broken one is
// refused with a log line and the old values stay.
func TestReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "poll.json")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"restricted_poll_interval": 30000}`)
	var logs bytes.Buffer
	b, err := New(Config{PollIntervalPath: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	write(`{"restricted_poll_interval": 5000, "unrestricted_poll_interval": 7000}`)
	b.Reload()
	if r, u := b.PollIntervals(); r != 5*time.Second || u != 7*time.Second {
		t.Errorf("after a reload: intervals %v, %v, want 5s, 7s", r, u)
	}
	write(`[`)
	b.Reload()
	if r, u := b.PollIntervals(); r != 5*time.Second || u != 7*time.Second || !strings.Contains(logs.String(), "poll intervals not reloaded") {
		t.Errorf("after a broken file: intervals %v, %v, want the old 5s, 7s and a log line:\n%s", r, u, &logs)
	}
}
