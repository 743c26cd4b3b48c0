package main

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/pebbletest"
)

func TestMain(m *testing.M) {
	if pebbletest.IsCommand() {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestACME: with -acme-hostnames the probe gets its certificate from an
// ACME server (pebble, validating HTTP-01 on loopback) and serves HTTPS
// with it, with the flags of docs/operators.md's unit.
func TestACME(t *testing.T) {
	ca := pebbletest.Start(t)
	addr := pebbletest.FreeAddr(t)
	const host = "natprobe.flurry.test"
	ca.Command(t, "-addr", addr, "-loopback-only",
		"-acme-hostnames", host, "-acme-email", "ops@flurry.test",
		"-acme-cert-cache", filepath.Join(t.TempDir(), "acme"),
		"-acme-directory", ca.Directory, "-acme-http-addr", ca.HTTPAddr)
	ca.Verify(t, addr, host)
	c := &http.Client{Transport: ca.Transport(addr, host), Timeout: time.Minute}
	resp, err := c.Get("https://" + host + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here over TLS: %s, want 404", resp.Status)
	}
}
