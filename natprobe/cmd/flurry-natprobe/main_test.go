package main

import (
	"net/http"
	"os"
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/pebbletest"
)

func TestMain(m *testing.M) { os.Exit(pebbletest.Main(m, main)) }

// TestACME: with -acme-hostnames the probe gets its certificate from an
// ACME server (pebble, validating HTTP-01 on loopback) and serves HTTPS
// with it, with the flags of docs/operators.md's unit.
func TestACME(t *testing.T) {
	ca := pebbletest.Start(t)
	const host = "natprobe.flurry.test"
	addr := ca.ServeTLS(t, host, "-loopback-only")
	resp, err := ca.Client(addr, host).Get("https://" + host + "/nothing-here")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET /nothing-here over TLS: %s, want 404", resp.Status)
	}
}
