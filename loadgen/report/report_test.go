package report

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/brokerload"
	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/relayload"
)

// TestRefuseNonLoopback checks that every run refuses a non-loopback target
// before connecting anywhere.
func TestRefuseNonLoopback(t *testing.T) {
	ctx := loadgentest.Context(t)
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"broker", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "http://192.0.2.1:8080"})
			return err
		}},
		{"broker name", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "https://broker.example/"})
			return err
		}},
		{"relay idle", func() error {
			_, err := relayload.RunRelayIdle(ctx, relayload.RelayIdleConfig{RelayRun: relayload.RelayRun{URL: "wss://192.0.2.1/"}})
			return err
		}},
		{"relay throughput", func() error {
			_, err := relayload.RunRelayThroughput(ctx, relayload.RelayThroughputConfig{URL: "ws://[2001:db8::1]:80/"})
			return err
		}},
		{"chain socks", func() error {
			_, err := chainload.RunChain(ctx, chainload.ChainConfig{SOCKSAddr: "192.0.2.1:1080", Target: "127.0.0.1:9"})
			return err
		}},
		{"chain url", func() error {
			_, err := chainload.RunChain(ctx, chainload.ChainConfig{SOCKSAddr: "127.0.0.1:1080", URL: "http://192.0.2.1/"})
			return err
		}},
		{"chain target", func() error {
			_, err := chainload.RunChain(ctx, chainload.ChainConfig{SOCKSAddr: "127.0.0.1:1080", Target: "192.0.2.1:9000"})
			return err
		}},
		{"target", func() error {
			_, err := tcptarget.Start(tcptarget.Config{Addr: "0.0.0.0:0"})
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, measure.ErrNotLoopback) {
				t.Fatalf("got %v, want ErrNotLoopback", err)
			}
		})
	}
}

func TestInvalidConfig(t *testing.T) {
	ctx := loadgentest.Context(t)
	for _, tc := range []struct {
		name string
		run  func() error
	}{
		{"no url", func() error { _, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{}); return err }},
		{"ws url for broker", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "ws://127.0.0.1/"})
			return err
		}},
		{"bad nat", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "http://127.0.0.1:1", ProxyNAT: brokerload.Mix{{Value: "symmetric", Weight: 1}}})
			return err
		}},
		{"bad pattern", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "http://127.0.0.1:1", RelayPattern: "no-dollar"})
			return err
		}},
		{"bad fingerprint", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "http://127.0.0.1:1", Fingerprint: "zz"})
			return err
		}},
		{"too many proxies", func() error {
			_, err := brokerload.RunBroker(ctx, brokerload.BrokerConfig{URL: "http://127.0.0.1:1", Proxies: measure.MaxPeers + 1})
			return err
		}},
		{"zero carriers", func() error {
			_, err := relayload.RunRelayIdle(ctx, relayload.RelayIdleConfig{RelayRun: relayload.RelayRun{URL: "ws://127.0.0.1:1/"}, Carriers: []int{0}})
			return err
		}},
		{"bad mode", func() error {
			_, err := relayload.RunRelayThroughput(ctx, relayload.RelayThroughputConfig{URL: "ws://127.0.0.1:1/", Mode: "upload"})
			return err
		}},
		{"chain no socks", func() error {
			_, err := chainload.RunChain(ctx, chainload.ChainConfig{Target: "127.0.0.1:1"})
			return err
		}},
		{"chain bad mode", func() error {
			_, err := chainload.RunChain(ctx, chainload.ChainConfig{SOCKSAddr: "127.0.0.1:1", Target: "127.0.0.1:1", Mode: "put"})
			return err
		}},
		{"target mode", func() error { _, err := tcptarget.Start(tcptarget.Config{Mode: "mirror"}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.run(); !errors.Is(err, measure.ErrInvalidConfig) {
				t.Fatalf("got %v, want ErrInvalidConfig", err)
			}
		})
	}
}

func TestSVGEmpty(t *testing.T) {
	r := NewResult("broker")
	var svg bytes.Buffer
	if err := r.WriteSVG(&svg); err != nil || !strings.Contains(svg.String(), "no data to plot") || r.HasPlots() {
		t.Fatalf("SVG of no result: %v, %q", err, svg.String())
	}
}
