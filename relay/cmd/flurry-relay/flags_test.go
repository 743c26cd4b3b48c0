package main

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func parse(args ...string) (*options, error) {
	fs := flag.NewFlagSet("flurry-relay", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, o, err := parseFlags(fs, args)
	return o, err
}

// TestFlagsToConfig: the flags land in relay.Config, with the aliases
// and the repeatable -backend.
func TestFlagsToConfig(t *testing.T) {
	fs := flag.NewFlagSet("flurry-relay", flag.ContinueOnError)
	c, o, err := parseFlags(fs, []string{
		"-addr", "127.0.0.1:8443", "-disable-tls", "-path", "/ws", "-acme-cache", "acme-cache",
		"-backend", "tcp:127.0.0.1:9001,name=a", "-backend", "tcp:127.0.0.1:9002",
		"-trusted-proxies", "10.0.0.0/8", "-max-sessions", "7", "-token-timeout", "3s",
		"-relay-key-file", "", "-log", "relay.log",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.ListenAddr != "127.0.0.1:8443" || c.Path != "/ws" || len(c.Backends) != 2 || c.Backends[0].Name != "a" ||
		len(c.TrustedProxies) != 1 || c.MaxSessions != 7 || c.TokenTimeout != 3*time.Second {
		t.Errorf("config %+v", c)
	}
	if !o.tls.Disable || o.tls.ACMECertCache != "acme-cache" || o.relayKeyFile != "" || o.logFile != "relay.log" {
		t.Errorf("options %+v", o)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-backend", "udp:127.0.0.1:1"}, "-backend"},
		{[]string{"-trusted-proxies", "not-an-address"}, "trusted-proxies"},
		{[]string{"extra"}, "unexpected arguments"},
	} {
		if _, err := parse(tt.args...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error naming %s", tt.args, err, tt.want)
		}
	}
}
