package chainload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
)

func TestChain(t *testing.T) {
	const size = 300 << 10
	source, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Source})
	if err != nil {
		t.Fatal(err)
	}
	defer source.Close()
	echo, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Echo})
	if err != nil {
		t.Fatal(err)
	}
	defer echo.Close()
	body := bytes.Repeat([]byte("flurry"), size/6)
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer web.Close()

	for _, tc := range []struct {
		name       string
		user, pass string
		cfg        ChainConfig
		wantBytes  int64
	}{
		{"get", "", "", ChainConfig{URL: web.URL + "/file", Requests: 3, Concurrency: 2}, 3 * int64(len(body))},
		{"get limited", "", "", ChainConfig{URL: web.URL + "/file", Requests: 2, Bytes: 1000}, 2000},
		{"read", "", "", ChainConfig{Target: source.Addr(), Bytes: size, Requests: 4, Concurrency: 2}, 4 * size},
		{"echo", "", "", ChainConfig{Target: echo.Addr(), Mode: ChainEcho, Bytes: size, Requests: 2}, 2 * size},
		{"echo with auth", "tor", "args", ChainConfig{Target: echo.Addr(), Mode: ChainEcho, Bytes: 1000, Requests: 1, SOCKSUsername: "tor", SOCKSPassword: "args"}, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socks, requests := loadgentest.StartSOCKS(t, tc.user, tc.pass)
			cfg := tc.cfg
			cfg.SOCKSAddr = socks
			res, err := RunChain(loadgentest.Context(t), cfg)
			if err != nil {
				t.Fatalf("RunChain: %v (%+v)", err, res)
			}
			if res.OK != int64(cfg.Requests) || res.Errors != 0 || res.Bytes != tc.wantBytes {
				t.Fatalf("result %+v, want %d ok and %d bytes", res, cfg.Requests, tc.wantBytes)
			}
			if requests.Load() != int64(cfg.Requests) {
				t.Fatalf("SOCKS server saw %d requests, want %d", requests.Load(), cfg.Requests)
			}
			if res.TTFB.Count != res.OK || res.TTFB.P50Ms <= 0 || res.TTFB.MaxMs > res.Total.MaxMs || res.MBPerSec <= 0 {
				t.Fatalf("timings %+v", res)
			}
			loadgentest.CheckReport(t, res, res.WriteTable, func(w io.Writer) error { return measure.WriteSVG(w, nil) }, false)
		})
	}
}

func TestChainSOCKSRefusals(t *testing.T) {
	for _, tc := range []struct {
		name       string
		user, pass string
		cfg        ChainConfig
		want       string
	}{
		{"wrong password", "tor", "args", ChainConfig{SOCKSUsername: "tor", SOCKSPassword: "nope"}, "authentication failed"},
		{"auth required", "tor", "args", ChainConfig{}, "refused authentication method"},
		{"connect refused", "", "", ChainConfig{Target: "127.0.0.1:1"}, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			socks, _ := loadgentest.StartSOCKS(t, tc.user, tc.pass)
			cfg := tc.cfg
			cfg.SOCKSAddr, cfg.Requests, cfg.Bytes = socks, 1, 10
			if cfg.Target == "" {
				cfg.Target = "127.0.0.1:9"
			}
			res, err := RunChain(loadgentest.Context(t), cfg)
			if !errors.Is(err, measure.ErrNoProgress) || res.Errors != 1 {
				t.Fatalf("got %v, %+v", err, res)
			}
			if !strings.Contains(fmt.Sprint(res.ErrorSamples), tc.want) {
				t.Fatalf("errors %q lack %q", res.ErrorSamples, tc.want)
			}
		})
	}
}
