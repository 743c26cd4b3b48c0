package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
)

// TestForTor: streams go to tor's ORPort, tor's options override the
// command line's, and bad options or backends are refused.
func TestForTor(t *testing.T) {
	orport, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer orport.Close()
	info := &pt.ServerInfo{OrAddr: orport.Addr().(*net.TCPAddr)}
	base := Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 3}

	cfg, err := ForTor(base, info, pt.Args{"num-turbotunnel": {"2"}, "orport-srcaddr": {"127.0.0.1"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.NumTurbotunnel != 2 || cfg.ForwardAddr != "" || cfg.Dial == nil {
		t.Errorf("config %+v", cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := cfg.Dial(ctx, netip.Addr{})
	if err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if c, err := orport.Accept(); err != nil {
		t.Fatal(err)
	} else {
		c.Close()
	}

	if cfg, err := ForTor(base, info, nil, ""); err != nil || cfg.NumTurbotunnel != 3 {
		t.Errorf("no options: %d state machines, %v", cfg.NumTurbotunnel, err)
	}
	for _, tt := range []struct {
		name    string
		cfg     Config
		options pt.Args
		srcAddr string
	}{
		{"zero num-turbotunnel", base, pt.Args{"num-turbotunnel": {"0"}}, ""},
		{"bad num-turbotunnel", base, pt.Args{"num-turbotunnel": {"two"}}, ""},
		{"bad orport-srcaddr option", base, pt.Args{"orport-srcaddr": {"example.com"}}, ""},
		{"bad -orport-srcaddr", base, nil, "example.com"},
		{"backends", Config{Backends: []Backend{{Addr: "127.0.0.1:1"}}}, nil, ""},
	} {
		if _, err := ForTor(tt.cfg, info, tt.options, tt.srcAddr); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: %v, want ErrInvalidConfig", tt.name, err)
		}
	}
}

// TestRunOn: the relay serves every listener it is given and its metrics,
// until its context ends; then the listeners and the metrics listener are
// closed.
func TestRunOn(t *testing.T) {
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r, err := New(Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 1, MetricsAddr: metricsAddr})
	if err != nil {
		t.Fatal(err)
	}
	var lns []net.Listener
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.RunOn(ctx, lns...) }()

	for _, ln := range lns {
		// Not a WebSocket upgrade: answered, then closed.
		resp, err := http.Get("http://" + ln.Addr().String() + "/")
		if err != nil {
			t.Fatalf("listener %s: %v", ln.Addr(), err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("listener %s: %s, want 400", ln.Addr(), resp.Status)
		}
	}
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get("http://" + metricsAddr + "/metrics")
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics: %v", err)
		}
	}
	if !strings.Contains(string(body), "flurry_relay_") {
		t.Errorf("metrics:\n%s", body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("RunOn = %v", err)
	}
	for _, a := range []string{lns[0].Addr().String(), lns[1].Addr().String(), metricsAddr} {
		if c, err := net.Dial("tcp", a); err == nil {
			c.Close()
			t.Errorf("%s still listens after RunOn returned", a)
		}
	}
}
