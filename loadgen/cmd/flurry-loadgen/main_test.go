package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/report"
)

func TestUsage(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "usage: flurry-loadgen"},
		{[]string{"-h"}, 0, "modes:"},
		{[]string{"fly"}, 2, `unknown mode "fly"`},
		{[]string{"broker", "-h"}, 0, "-idle-polls"},
		{[]string{"broker", "-clients", "x"}, 2, "not an integer"},
		{[]string{"broker", "-url", "http://192.0.2.1:8080"}, 2, "not a loopback address"},
		{[]string{"relay", "-url", "ws://example.com/"}, 2, "not a loopback address"},
		{[]string{"chain", "-socks", "192.0.2.1:1080"}, 2, "not a loopback address"},
		{[]string{"target", "-addr", "0.0.0.0:9000"}, 2, "not a loopback address"},
		{[]string{"broker", "extra"}, 2, "unexpected arguments"},
		{[]string{"attack"}, 2, "usage: flurry-loadgen attack"},
		{[]string{"attack", "-h"}, 0, "relay-sessions"},
		{[]string{"attack", "nuke"}, 2, `unknown attack "nuke"`},
		{[]string{"attack", "-h"}, 0, "connflood"},
		{[]string{"attack", "connflood", "-h"}, 0, "-conns-per-addr"},
		{[]string{"attack", "connflood", "-flood-addrs", "127.1.0.9"}, 2, "flood address"},
		{[]string{"sidebyside", "-impl-env", "flurry"}, 2, "want NAME=KEY=VALUE"},
		{[]string{"proxyusers", "-impl-env", "flurry=GOGC=150"}, 2, "no -impl flurry"},
		{[]string{"relayusers", "-h"}, 0, "-impl-env"},
		{[]string{"soak", "-h"}, 0, "-proxy-kill-interval"},
		{[]string{"soak", "-bin", "/nonexistent"}, 2, "missing binaries"},
		{[]string{"attack", "relay-sessions", "-h"}, 0, "-honest-bytes"},
		{[]string{"attack", "relay-sessions", "-url", "ws://192.0.2.1/"}, 2, "not a loopback address"},
		{[]string{"attack", "relay-sessions", "-packet", "x"}, 2, "want header, nop or syn"},
		{[]string{"attack", "carrier-hold", "-source", "192.0.2.1"}, 2, "not a loopback address"},
		{[]string{"attack", "slowloris", "-url", "ftp://127.0.0.1/"}, 2, "want http|https|ws|wss"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(ctx, tc.args, &stdout, &stderr); code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout.String(), stderr.String())
			}
			if !strings.Contains(stdout.String()+stderr.String(), tc.want) {
				t.Fatalf("output lacks %q\nstdout: %s\nstderr: %s", tc.want, stdout.String(), stderr.String())
			}
		})
	}
}

func TestBrokerRun(t *testing.T) {
	b, err := broker.New(broker.Config{DisableRateLimits: true}) // every peer at one address
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	defer b.Close()
	dir := t.TempDir()
	jsonPath, svgPath := filepath.Join(dir, "out.json"), filepath.Join(dir, "out.svg")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"broker", "-url", srv.URL, "-proxies", "4", "-clients", "1,2",
		"-duration", "200ms", "-json", jsonPath, "-svg", svgPath, "-quiet"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "matches/s") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("-quiet but stderr has:\n%s", stderr.String())
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var res report.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatalf("JSON: %v", err)
	}
	if res.Mode != "broker" || res.Broker == nil || len(res.Broker.Steps) != 2 || res.Broker.Steps[1].Matches == 0 {
		t.Fatalf("result %s", raw)
	}
	if svg, err := os.ReadFile(svgPath); err != nil || !bytes.Contains(svg, []byte("<polyline")) {
		t.Fatalf("SVG: %v\n%s", err, svg)
	}
}

// TestAttackRun runs "attack junk-offers" briefly against a broker with its
// default limits, and checks the attack mode table's usage.
func TestAttackRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"attack"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), "amp-flood") {
		t.Fatalf("attack without a mode: exit %d, stderr %s", code, stderr.String())
	}
	b, err := broker.New(broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.Handler())
	defer srv.Close()
	defer b.Close()
	stdout.Reset()
	stderr.Reset()
	code := run(context.Background(), []string{"attack", "junk-offers", "-url", srv.URL, "-requests", "200", "-proxies", "4",
		"-clients", "2", "-rate", "10", "-duration", "500ms", "-quiet"}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	if !strings.Contains(stdout.String(), "honest match rate during the attack") {
		t.Errorf("no table on stdout:\n%s", stdout.String())
	}
}

func TestTargetRun(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"target", "-addr", "127.0.0.1:0", "-duration", "1ms", "-mode", "sink"}, &stdout, &stderr)
	if code != 0 || !strings.Contains(stdout.String(), "sink target listening on 127.0.0.1:") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
}

func TestImplEnv(t *testing.T) {
	f := implFlag{parse: func(name, prefix string) (chainproc.Implementation, error) {
		return chainproc.Implementation{Name: name, Server: prefix + "relay"}, nil
	}}
	for _, s := range []string{"a=x/", "b=y/"} {
		if err := f.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []string{"b=GOGC=150", "b=GODEBUG=madvdontneed=0,gctrace=1"} {
		if err := f.env.Set(s); err != nil {
			t.Fatal(err)
		}
	}
	for _, bad := range []string{"b", "b=GOGC", "=GOGC=1", "b==1", "b=A B=1"} {
		if err := f.env.Set(bad); err == nil {
			t.Errorf("-impl-env %q accepted", bad)
		}
	}
	list, err := f.implementations()
	if err != nil {
		t.Fatal(err)
	}
	if len(list[0].Env) != 0 || !slices.Equal(list[1].Env, []string{"GOGC=150", "GODEBUG=madvdontneed=0,gctrace=1"}) {
		t.Errorf("envs %q, %q", list[0].Env, list[1].Env)
	}
	if err := f.env.Set("c=GOGC=1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.implementations(); !errors.Is(err, measure.ErrInvalidConfig) {
		t.Errorf("-impl-env for no -impl: err = %v", err)
	}
}
