package proxy

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/natprobe"
)

func startNATProbe(t testing.TB, cfg natprobe.Config) *httptest.Server {
	t.Helper()
	s, err := natprobe.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(func() {
		hs.Close()
		s.Close()
	})
	return hs
}

func TestProbeNAT(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	open := startNATProbe(t, natprobe.Config{LoopbackOnly: true})
	// A probe peer with no usable address: nothing can reach it, as with
	// a proxy behind a NAT that drops the probe's packets.
	closed := startNATProbe(t, natprobe.Config{LoopbackOnly: true, ConfigureSettingEngine: func(se *webrtc.SettingEngine) {
		se.SetIPFilter(func(net.IP) bool { return false })
	}})
	tests := []struct {
		name    string
		url     string
		want    string
		wantErr error
	}{
		{"unrestricted on loopback", open.URL + natprobe.Path, "unrestricted", nil},
		{"restricted when the probe is unreachable", closed.URL + natprobe.Path, "restricted", nil},
		{"probe server error keeps unknown", open.URL + "/nowhere", "unknown", ErrNATProbe},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(Config{
				BrokerURL: "http://127.0.0.1:1/", AllowedRelayPattern: "$",
				NATProbeURL: tt.url, NATProbeTimeout: time.Second, LoopbackOnly: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.ProbeNAT(context.Background())
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("ProbeNAT error %v, want %v", err, tt.wantErr)
			}
			if got != tt.want || p.NATType() != tt.want {
				t.Errorf("ProbeNAT = %q, NATType %q; want %q", got, p.NATType(), tt.want)
			}
		})
	}
}

// TestPollsReportProbedNAT: Run probes at start and later polls carry the
// result.
func TestPollsReportProbedNAT(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	probe := startNATProbe(t, natprobe.Config{LoopbackOnly: true})
	e := startE2E(t, func(c *Config) {
		c.NATProbeURL = probe.URL + natprobe.Path
		c.NATRetestInterval = -1
	})
	for {
		p := waitFor(t, e.broker.pollSeen, "a poll reporting the NAT type")
		if p.req.NAT == "unrestricted" {
			break
		}
		if p.req.NAT != "unknown" {
			t.Fatalf("poll NAT %q", p.req.NAT)
		}
	}
	e.stop()
	rec := httptest.NewRecorder()
	e.proxy.MetricsHandler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, MetricsPath, nil))
	if want := `flurry_proxy_nat_type{type="unrestricted"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("metrics lack %s", want)
	}
}
