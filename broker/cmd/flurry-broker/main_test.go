package main

import (
	"bytes"
	"flag"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestTLSModeFlags(t *testing.T) {
	tests := []struct {
		args []string
		want tlsMode
		err  string
	}{
		{[]string{"-disable-tls"}, modePlain, ""},
		{[]string{"-cert", "c", "-key", "k"}, modeCertFile, ""},
		{[]string{"-acme-hostnames", "a.example"}, modeACME, ""},
		{nil, 0, "one of -acme-hostnames, -cert and -key, or -disable-tls is required"},
		{[]string{"-cert", "c"}, 0, "-cert and -key must be given together"},
		{[]string{"-disable-tls", "-cert", "c", "-key", "k"}, 0, "-disable-tls cannot be combined"},
		{[]string{"-acme-hostnames", "a", "-key", "k"}, 0, "-acme-hostnames cannot be combined"},
		{[]string{"-disable-tls", "extra"}, 0, "unexpected arguments"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			o, err := parseFlags(fs, tt.args)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m, _ := o.tlsMode(); m != tt.want {
				t.Errorf("mode = %v, want %v", m, tt.want)
			}
		})
	}
}

func TestLoggerScrubs(t *testing.T) {
	var buf bytes.Buffer
	log, err := newLogger(&buf, "info", false)
	if err != nil {
		t.Fatal(err)
	}
	log.Info("peer 192.0.2.1:443 said hi", "addr", "[2001:db8::1]:80")
	if s := buf.String(); strings.Contains(s, "192.0.2.1") || strings.Contains(s, "2001:db8") {
		t.Errorf("address leaked: %s", s)
	}
	buf.Reset()
	log, _ = newLogger(&buf, "info", true)
	log.Info("peer 192.0.2.1")
	if !strings.Contains(buf.String(), "192.0.2.1") {
		t.Errorf("-unsafe-logging scrubbed: %s", buf.String())
	}
	if _, err := newLogger(&buf, "loud", false); err == nil {
		t.Error("bad level accepted")
	}
}

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
	tests := []struct {
		name string
		args []string
		err  string // "" = loads
		nil  bool
	}{
		{"disabled", []string{"-disable-geoip", "-geoipdb", missing}, "", true},
		{"both", []string{"-geoipdb", good4, "-geoip6db", good6}, "", false},
		{"IPv4 only", []string{"-geoipdb", good4, "-geoip6db", ""}, "", false},
		{"missing file", []string{"-geoipdb", missing, "-geoip6db", good6}, "no such file", false},
		{"malformed file", []string{"-geoipdb", good4, "-geoip6db", bad}, bad + ":1", false},
		{"neither", []string{"-geoipdb", "", "-geoip6db", ""}, "no geoip file given", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o, err := parseFlags(fs, append([]string{"-disable-tls"}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			db, err := openGeoIP(o)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || !strings.Contains(err.Error(), "-disable-geoip") {
					t.Fatalf("err = %v, want one mentioning %q and -disable-geoip", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (db == nil) != tt.nil {
				t.Fatalf("db = %v, want nil: %v", db, tt.nil)
			}
			if db != nil && db.Lookup(netip.MustParseAddr("127.0.0.1")) != "AA" {
				t.Error("127.0.0.1 is not AA")
			}
		})
	}
}

func TestMetricsFlags(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	o, err := parseFlags(fs, []string{"-disable-tls"})
	if err != nil {
		t.Fatal(err)
	}
	if o.metricsInterval != 24*time.Hour || o.metricsAddr != "" || o.geoipDB != "/usr/share/tor/geoip" || o.geoip6DB != "/usr/share/tor/geoip6" {
		t.Errorf("defaults: %+v", o)
	}
	fs = flag.NewFlagSet("test", flag.ContinueOnError)
	o, err = parseFlags(fs, []string{"-disable-tls", "-metrics-interval", "1m", "-metrics-addr", "127.0.0.1:9090", "-metrics-log", "m.log"})
	if err != nil {
		t.Fatal(err)
	}
	if o.metricsInterval != time.Minute || o.metricsAddr != "127.0.0.1:9090" || o.metricsLog != "m.log" {
		t.Errorf("parsed: %+v", o)
	}
}

func TestUnansweredPenaltyFlag(t *testing.T) {
	tests := []struct {
		args []string
		want time.Duration // Config.UnansweredPenalty
	}{
		{nil, time.Hour},
		{[]string{"-unanswered-penalty", "10m"}, 10 * time.Minute},
		{[]string{"-unanswered-penalty", "0"}, -1},
		{[]string{"-unanswered-penalty", "-1s"}, -1},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			o, err := parseFlags(fs, append([]string{"-disable-tls"}, tt.args...))
			if err != nil {
				t.Fatal(err)
			}
			if got := penaltyConfig(o.unansweredPenalty); got != tt.want {
				t.Errorf("penalty = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBadCertificateFiles: the certificate is loaded before the broker
// listens, and a missing one is an error that names the flags.
func TestBadCertificateFiles(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dir := t.TempDir()
	o, err := parseFlags(fs, []string{"-cert", filepath.Join(dir, "missing.pem"), "-key", filepath.Join(dir, "missing.key"),
		"-disable-geoip", "-addr", "127.0.0.1:0", "-log-level", "error"})
	if err != nil {
		t.Fatal(err)
	}
	if err := run(o); err == nil || !strings.Contains(err.Error(), "-cert/-key") {
		t.Fatalf("run = %v, want a -cert/-key error", err)
	}
}

func TestSQSFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr bool
	}{
		{"none", []string{"-disable-tls"}, false},
		{"name and region", []string{"-disable-tls", "-broker-sqs-name", "q", "-broker-sqs-region", "us-east-1"}, false},
		{"name without region", []string{"-disable-tls", "-broker-sqs-name", "q"}, true},
		{"region without name", []string{"-disable-tls", "-broker-sqs-region", "us-east-1"}, true},
		{"profiles without name", []string{"-disable-tls", "-sqs-profiles", "a,b"}, true},
		{"endpoint without name", []string{"-disable-tls", "-broker-sqs-endpoint", "http://127.0.0.1:1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("flurry-broker", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			_, err := parseFlags(fs, tt.args)
			if (err != nil) != tt.wantErr {
				t.Errorf("parseFlags(%q) error = %v, want error %v", tt.args, err, tt.wantErr)
			}
		})
	}
}
