package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/proxy"
)

// runWith runs the command with args and returns its exit code and stderr.
// The broker URL given is refused by proxy.New, so run stops after its
// start-up checks and never touches the network.
func runWith(t *testing.T, args ...string) (int, string) {
	t.Helper()
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	oldStderr := os.Stderr
	os.Stderr = f
	code := run(args)
	os.Stderr = oldStderr
	out, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return code, string(out)
}

// TestEphemeralPortsRangeFlag: a malformed range is refused (the warning
// of a narrow one is proxy.New's, tested there).
func TestEphemeralPortsRangeFlag(t *testing.T) {
	code, out := runWith(t, "-broker", "ftp://broker.invalid/", "-allowed-relay-hostname-pattern", "relay.invalid$",
		"-ephemeral-ports-range", "40001:40000")
	if code != 2 || !strings.Contains(out, "port range") {
		t.Errorf("exit code %d, want 2 naming the port range; stderr:\n%s", code, out)
	}
}

// TestSnowflakeCompatibilityFlags: Snowflake's logging flags work, and its
// flags for features this proxy lacks are accepted with a notice, so that
// a Snowflake proxy's command line starts a Flurry proxy.
func TestSnowflakeCompatibilityFlags(t *testing.T) {
	base := []string{"-broker", "ftp://broker.invalid/", "-allowed-relay-hostname-pattern", "relay.invalid$",
		"-stun", "stun:127.0.0.1:3478"}
	t.Run("log file in UTC", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "proxy.log")
		code, stderr := runWith(t, append(base, "-log", path, "-disable-stats-logger", "-geoipdb", "/usr/share/tor/geoip")...)
		if code != 2 {
			t.Fatalf("exit code %d; stderr:\n%s", code, stderr)
		}
		log, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(log), "flag ignored") || !strings.Contains(string(log), "-geoipdb") {
			t.Errorf("no notice for -geoipdb in the log file:\n%s", log)
		}
		if !regexp.MustCompile(`time=\S+Z `).Match(log) {
			t.Errorf("log times are not UTC:\n%s", log)
		}
		if strings.Contains(stderr, "flag ignored") {
			t.Errorf("the log went to stderr too:\n%s", stderr)
		}
	})
	t.Run("covert DTLS", func(t *testing.T) {
		for _, v := range []string{"disable", "DISABLE", "mimic", "randomize", "randomizemimic"} {
			_, stderr := runWith(t, append(base, "-covertdtls-config", v)...)
			if strings.Contains(stderr, "covertdtls") {
				t.Errorf("-covertdtls-config %s refused; stderr:\n%s", v, stderr)
			}
		}
		for _, args := range [][]string{{"-covertdtls-config", "chrome"}, {"-covertdtls-config", "mimic", "-covertdtls-fingerprint", "fefd00"}} {
			code, stderr := runWith(t, append(base, args...)...)
			if code != 2 || !strings.Contains(stderr, "-covertdtls-config/-covertdtls-fingerprint:") {
				t.Errorf("%q: exit code %d; stderr:\n%s", args, code, stderr)
			}
		}
	})
	t.Run("unwritable log file", func(t *testing.T) {
		code, stderr := runWith(t, append(base, "-log", filepath.Join(t.TempDir(), "no", "such", "dir", "log"))...)
		if code != 2 || !strings.Contains(stderr, "-log:") {
			t.Errorf("exit code %d, stderr:\n%s", code, stderr)
		}
	})
}

// TestNetworkPreset: without -network, -broker and -relay are required and
// the error says how to get them; -network tor fills in the flags left
// unset (its relay pattern refuses another relay), a flag given wins, and
// an unknown network is refused by name.
func TestNetworkPreset(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, "set -broker and -relay (or -allowed-relay-hostname-pattern), or -network NAME."},
		{[]string{"-capacity", "5"}, "or -network NAME."},
		{[]string{"-network", "nope"}, `-network: unknown network "nope" (known: tor)`},
		{[]string{"-network", "tor", "-broker", "ftp://broker.invalid/"}, "ftp://broker.invalid/"},
		{[]string{"-network", "tor", "-relay", "wss://relay.example.org/"}, "default relay: " + proxy.ErrRelayHostname.Error()},
	}
	for _, tt := range tests {
		code, out := runWith(t, tt.args...)
		if code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("%q: exit code %d, stderr lacks %q:\n%s", tt.args, code, tt.want, out)
		}
	}
	if _, out := runWith(t); !strings.Contains(out, "    -broker https://snowflake-broker.torproject.net/\n") {
		t.Errorf("the error does not show what -network tor sets:\n%s", out)
	}
}
