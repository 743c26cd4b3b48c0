package main

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/pebbletest"
)

func TestMain(m *testing.M) { os.Exit(pebbletest.Main(m, main)) }

func parse(t *testing.T, args ...string) (broker.Config, *options, error) {
	t.Helper()
	fs := flag.NewFlagSet("flurry-broker", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return parseFlags(fs, args)
}

func TestTLSFlags(t *testing.T) {
	tests := []struct {
		args []string
		err  string
	}{
		{[]string{"-disable-tls"}, ""},
		{[]string{"-cert", "c", "-key", "k"}, ""},
		{[]string{"-acme-hostnames", "a.example"}, ""},
		{nil, "one of -acme-hostnames, -cert and -key, or -disable-tls is required"},
		{[]string{"-cert", "c"}, "-cert and -key must be given together"},
		{[]string{"-disable-tls", "-cert", "c", "-key", "k"}, "-disable-tls cannot be combined"},
		{[]string{"-acme-hostnames", "a", "-key", "k"}, "-acme-hostnames cannot be combined"},
		{[]string{"-disable-tls", "extra"}, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			_, _, err := parse(t, tt.args...)
			if (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("err = %v, want %q", err, tt.err)
			}
		})
	}
}

func TestFlagsToConfig(t *testing.T) {
	c, o, err := parse(t, "-disable-tls")
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsInterval != 24*time.Hour || c.MetricsAddr != broker.DefaultMetricsAddr || c.PublicPrometheus || o.geoip != [2]string{broker.DefaultGeoIPFile, broker.DefaultGeoIP6File} ||
		c.UnansweredPenalty != time.Hour || c.ListenAddr != ":443" || len(c.SQS) != 0 {
		t.Errorf("defaults: %+v %+v", c, o)
	}
	c, _, err = parse(t, "-disable-tls", "-metrics-interval", "1m", "-metrics-addr", "127.0.0.1:9090", "-metrics-log", "m.log",
		"-trusted-proxies", "10.0.0.0/8", "-rate-limit-exempt", "192.0.2.1", "-sqs-global-rate", "7",
		"-public-prometheus", "-page-rate", "2", "-page-burst", "3", "-page-global-rate", "4")
	if err != nil {
		t.Fatal(err)
	}
	if c.MetricsInterval != time.Minute || c.MetricsAddr != "127.0.0.1:9090" || c.MetricsLogPath != "m.log" ||
		len(c.TrustedProxies) != 1 || len(c.RateLimitExempt) != 1 || c.SQSGlobalRate != 7 ||
		!c.PublicPrometheus || c.PageRate != 2 || c.PageBurst != 3 || c.PageGlobalRate != 4 {
		t.Errorf("parsed: %+v", c)
	}
	if c, _, err := parse(t, "-disable-tls", "-metrics-addr", ""); err != nil || c.MetricsAddr != "" {
		t.Errorf("-metrics-addr \"\": %q, %v", c.MetricsAddr, err)
	}
	if _, _, err := parse(t, "-disable-tls", "-trusted-proxies", "nonsense"); err == nil {
		t.Error("a bad -trusted-proxies was accepted")
	}
}

func TestUnansweredPenaltyFlag(t *testing.T) {
	for arg, want := range map[string]time.Duration{"10m": 10 * time.Minute, "0": -1, "-1s": -1} {
		c, _, err := parse(t, "-disable-tls", "-unanswered-penalty", arg)
		if err != nil || c.UnansweredPenalty != want {
			t.Errorf("-unanswered-penalty %s: %v, %v, want %v", arg, c.UnansweredPenalty, err, want)
		}
	}
}

func TestSQSFlags(t *testing.T) {
	c, _, err := parse(t, "-disable-tls", "-broker-sqs-name", "q", "-broker-sqs-region", "us-east-1", "-sqs-profiles", "a, b")
	if err != nil || len(c.SQS) != 2 || c.SQS[1].Profile != "b" || c.SQS[0].QueueName != "q" {
		t.Fatalf("SQS = %+v, %v", c.SQS, err)
	}
	for _, args := range [][]string{
		{"-broker-sqs-name", "q"},
		{"-broker-sqs-region", "us-east-1"},
		{"-sqs-profiles", "a,b"},
		{"-broker-sqs-endpoint", "http://127.0.0.1:1"},
	} {
		c, _, err := parse(t, append([]string{"-disable-tls"}, args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := broker.New(c); err == nil {
			t.Errorf("%q: accepted", args)
		}
	}
}

// TestStartupErrors: a certificate, or a geoip file named on the command
// line, that cannot be loaded is an error naming the flags.
func TestStartupErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-cert", filepath.Join(dir, "missing.pem"), "-key", filepath.Join(dir, "missing.key"), "-disable-geoip"}, "-cert/-key"},
		{[]string{"-disable-tls", "-geoipdb", filepath.Join(dir, "missing")}, "-disable-geoip runs without"},
	} {
		c, o, err := parse(t, append(tt.args, "-addr", "127.0.0.1:0", "-log-level", "error")...)
		if err != nil {
			t.Fatal(err)
		}
		if err := serve(c, o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: serve = %v, want an error with %q", tt.args, err, tt.want)
		}
	}
}

// TestACME: with -acme-hostnames the broker gets its certificate from an
// ACME server (pebble, validating HTTP-01 on loopback) and serves HTTPS,
// HTTP/2 offered, with it, with the flags of docs/operators.md's unit.
func TestACME(t *testing.T) {
	ca := pebbletest.Start(t)
	const host = "broker.flurry.test"
	addr := ca.ServeTLS(t, host, "-disable-geoip")
	resp, err := ca.Client(addr, host).Get("https://" + host + "/robots.txt")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
		t.Errorf("GET /robots.txt over TLS: %s %s, want 200 over HTTP/2", resp.Proto, resp.Status)
	}
}

func TestNATSFlags(t *testing.T) {
	c, _, err := parse(t, "-disable-tls", "-nats", "nats://192.0.2.1:4222", "-nats-nkey", "b.nk", "-nats-tls-ca", "ca.pem", "-nats-insecure")
	if err != nil || c.NATS != "nats://192.0.2.1:4222" || c.NATSNKey != "b.nk" || c.NATSTLSCA != "ca.pem" || !c.NATSInsecure {
		t.Fatalf("parsed: NATS %q NKey %q TLS CA %q insecure %v, %v", c.NATS, c.NATSNKey, c.NATSTLSCA, c.NATSInsecure, err)
	}
	c, _, err = parse(t, "-disable-tls", "-nats", "nats://127.0.0.1:4222")
	if err != nil || c.NATSInsecure || c.NATSNKey != "" || c.NATSTLSCA != "" {
		t.Fatalf("defaults: insecure %v NKey %q TLS CA %q, %v", c.NATSInsecure, c.NATSNKey, c.NATSTLSCA, err)
	}
}
