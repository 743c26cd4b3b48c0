package loadgen

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestParseUDPCounter(t *testing.T) {
	const snmp = `Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 1000 2 702 900 702 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 5 0 0 0 0
`
	got, err := parseUDPCounter(snmp, "RcvbufErrors")
	if err != nil || got != 702 {
		t.Errorf("RcvbufErrors = %d, %v; want 702", got, err)
	}
	if got, err := parseUDPCounter(snmp, "OutDatagrams"); err != nil || got != 900 {
		t.Errorf("OutDatagrams = %d, %v; want 900", got, err)
	}
	if _, err := parseUDPCounter("Ip: Forwarding\nIp: 1\n", "RcvbufErrors"); err == nil {
		t.Error("no Udp lines: want an error")
	}
}

func TestImplementationFromPrefix(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x-broker", "x-proxy", "x-client", "x-relay"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	im, err := ImplementationFromPrefix("x", filepath.Join(dir, "x-"))
	if err != nil {
		t.Fatal(err)
	}
	if im.Server != filepath.Join(dir, "x-relay") || im.Client != filepath.Join(dir, "x-client") {
		t.Errorf("got %+v", im)
	}
	if _, err := ImplementationFromPrefix("y", filepath.Join(dir, "y-")); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("missing binaries: err = %v, want ErrInvalidConfig", err)
	}
}

func TestSideBySideConfigChecks(t *testing.T) {
	for _, cfg := range []SideBySideConfig{
		{Dir: t.TempDir()},
		{Implementations: []Implementation{{Name: "a"}}},
		{Dir: t.TempDir(), Implementations: []Implementation{{Name: "a"}, {Name: "a"}}},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}
