package demo_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/tortest"
)

func TestSumMetric(t *testing.T) {
	text := []byte(`# HELP flurry_proxy_connected_clients Clients.
# TYPE flurry_proxy_connected_clients gauge
flurry_proxy_connected_clients 2
flurry_proxy_connected_clients_extra 100
flurry_relay_stream_bytes_total{direction="upstream"} 10
flurry_relay_stream_bytes_total{direction="downstream"} 2.5e+06
flurry_x{a="}"} 7
`)
	tests := []struct {
		name string
		want float64
		ok   bool
	}{
		{"flurry_proxy_connected_clients", 2, true},
		{"flurry_relay_stream_bytes_total", 2_500_010, true},
		{"flurry_x", 7, true},
		{"flurry_missing", 0, false},
		{"flurry_proxy", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := demo.SumMetric(text, tt.name)
			if got != tt.want || ok != tt.ok {
				t.Errorf("SumMetric = %v, %v; want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRendezvousTime(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "client.log")
	log := `=== demo: start 1 of client
time=2026-11-29T19:49:25.729Z level=INFO msg="offer created" peer=snowflake-1
time=2026-11-29T19:49:25.979Z level=INFO msg="broker answered" peer=snowflake-1
time=2026-11-29T19:49:26.979Z level=INFO msg="broker answered" peer=snowflake-2
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	d, ok := demo.RendezvousTime(path)
	if !ok || d != 250*time.Millisecond {
		t.Errorf("RendezvousTime = %v, %v; want 250ms, true", d, ok)
	}
	if _, ok := demo.RendezvousTime(filepath.Join(dir, "missing.log")); ok {
		t.Error("RendezvousTime of a missing file is ok")
	}
}

func TestEventTimes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "client.log")
	log := `=== demo: start 1 of client
time=2026-11-29T19:49:25.729Z level=INFO msg="proxy lost snowflake-1: no data from proxy"
time=2026-11-29T19:49:26.729Z level=INFO msg="offer created snowflake-2"
time=2026-11-29T19:49:26.979Z level=INFO msg="proxy lost snowflake-2: no data from proxy"
time=2026-11-29T19:49:27.100Z level=INFO msg="offer created snowflake-3"
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 11, 29, 19, 49, 26, 0, time.UTC)
	got := demo.EventTimes(path, from, "proxy lost", "offer created", "proxy connected")
	want := map[string]time.Time{
		"proxy lost":    from.Add(979 * time.Millisecond),
		"offer created": from.Add(729 * time.Millisecond),
	}
	if len(got) != len(want) || !got["proxy lost"].Equal(want["proxy lost"]) || !got["offer created"].Equal(want["offer created"]) {
		t.Errorf("EventTimes = %v; want %v", got, want)
	}
}

func TestTorBootstrap(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notice.log")
	log := `Nov 29 19:47:42.000 [notice] Bootstrapped 0% (starting): Starting
Nov 29 19:47:43.000 [notice] Bootstrapped 10% (conn_done): Connected to a relay
Nov 29 19:47:43.000 [notice] Bootstrapped 15% (handshake_done): Handshake with a relay done
Nov 29 19:47:44.000 [notice] Something else
`
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	if pct, tag := tortest.TorBootstrap(path); pct != 15 || tag != "handshake_done" {
		t.Errorf("TorBootstrap = %d %q, want 15 handshake_done", pct, tag)
	}
}

func TestWriteBridgeList(t *testing.T) {
	path := filepath.Join(t.TempDir(), "bridges.json")
	if err := demo.WriteBridgeList(path, "2B280B23E1107BB62ABFC40DDCC8824814F80A72", "ws://127.0.0.1:8000/"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := `{"displayName":"flurry-demo","webSocketAddress":"ws://127.0.0.1:8000/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}` + "\n"
	if string(b) != want {
		t.Errorf("bridge list\n%s\nwant\n%s", b, want)
	}
}

// socksServer is a minimal SOCKS5 server (no auth, CONNECT to IPv4) that
// connects to the requested address: just enough to test the demo's SOCKS
// client and Fetch against a real Target.
func socksServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 10)
				if _, err := io.ReadFull(c, buf[:3]); err != nil {
					return
				}
				c.Write([]byte{5, 0})
				if _, err := io.ReadFull(c, buf[:10]); err != nil || buf[3] != 1 {
					return
				}
				addr := net.TCPAddr{IP: net.IP(buf[4:8]), Port: int(binary.BigEndian.Uint16(buf[8:10]))}
				up, err := net.Dial("tcp", addr.String())
				if err != nil {
					c.Write([]byte{5, 5, 0, 1, 0, 0, 0, 0, 0, 0})
					return
				}
				defer up.Close()
				c.Write([]byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0})
				go io.Copy(up, c)
				io.Copy(c, up)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestFetchThroughSOCKS(t *testing.T) {
	target, err := demo.StartTarget(300_000)
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	if target.SHA256 != sha256.Sum256(demo.GenerateFile(300_000)) {
		t.Fatal("target digest differs from the generated file's")
	}
	socks := socksServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var progress demo.Progress
	res, err := demo.FetchTarget(ctx, socks, target, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if res.Bytes != 300_000 || progress.Bytes() != 300_000 || res.FirstByte <= 0 || res.Total < res.FirstByte {
		t.Errorf("result %+v, progress %d", res, progress.Bytes())
	}

	// A refused CONNECT is an error, not a hang.
	closed, err := demo.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := demo.DialSOCKS5(ctx, socks, closed); !errors.Is(err, demo.ErrSOCKS) {
		t.Errorf("CONNECT to a closed port: %v, want ErrSOCKS", err)
	}
	// A wrong file is caught by its digest.
	other, err := demo.StartTarget(1000)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	wrong := &demo.Target{URL: other.URL, Size: target.Size, SHA256: target.SHA256}
	if _, err := demo.FetchTarget(ctx, socks, wrong, nil); !errors.Is(err, demo.ErrChecksum) {
		t.Errorf("fetching the wrong file: %v, want ErrChecksum", err)
	}
	if err := target.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := target.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
