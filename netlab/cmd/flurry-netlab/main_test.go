package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

func TestUsageNamesModes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-h"}, &out, &errb); code != 0 {
		t.Fatalf("-h exit %d", code)
	}
	for _, want := range []string{"run [flags] -- CMD", "tcpref", "-profile", "-censor", "-size", "FLURRY_NETLAB_OUTSIDE_ADDR", "mobile"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("usage lacks %q:\n%s", want, errb.String())
		}
	}
}

func TestBadArguments(t *testing.T) {
	for _, args := range [][]string{
		{},
		{"serve"},
		{"run", "-profile", "dialup", "--", "true"},
		{"run", "-up", "loss=200%", "--", "true"},
		{"run", "-censor", "no-such-censor", "--", "true"},
		{"run"},
		{"tcpref", "-size", "lots"},
		{"tcpref", "-size", "0"},
		{"tcpref", "extra"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("run(%q) exit %d, want 2; stderr:\n%s", args, code, errb.String())
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"20MiB": 20 << 20, "1.5MB": 1_500_000, "4096": 4096, "64KiB": 64 << 10, "1GB": 1e9, "7B": 7} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
}

func TestRunAndTCPRef(t *testing.T) {
	testenv.Root(t, "flurry-netlab (namespaces, TUN devices)")
	if testing.Short() {
		t.Skip("builds a network lab; skipped with -short")
	}
	var out, errb bytes.Buffer
	code := run([]string{"run", "-name", "ftcmd", "-profile", "delay=1ms", "--", "sh", "-c",
		`test "$FLURRY_NETLAB_OUTSIDE_ADDR" = 203.0.113.1 && ip -4 addr show | grep -q 198.51.100.2 && exit 7`}, &out, &errb)
	if code != 7 {
		t.Errorf("run exit %d, want the command's 7; stdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	out.Reset()
	errb.Reset()
	if code := run([]string{"tcpref", "-name", "ftcmd", "-size", "1MiB"}, &out, &errb); code != 0 {
		t.Fatalf("tcpref exit %d; stderr:\n%s", code, errb.String())
	}
	if !strings.Contains(out.String(), "MB/s") {
		t.Errorf("tcpref printed no MB/s:\n%s", out.String())
	}
	if _, err := os.Stat("/run/netns/ftcmdc"); err == nil {
		t.Errorf("namespace ftcmdc left behind")
	}
}
