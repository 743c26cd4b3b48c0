package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flurrypt/flurry/internal/pebbletest"
)

func TestMain(m *testing.M) {
	if pebbletest.IsCommand() {
		main()
		return
	}
	os.Exit(m.Run())
}

// TestACME: with -acme-hostnames the relay gets its certificate from an
// ACME server (pebble, validating HTTP-01 on loopback) and serves TLS with
// it, with the flags docs/operators.md's unit uses.
func TestACME(t *testing.T) {
	ca := pebbletest.Start(t)
	addr := pebbletest.FreeAddr(t)
	const host = "relay.flurry.test"
	ca.Command(t, "-addr", addr, "-forward", pebbletest.FreeAddr(t),
		"-acme-hostnames", host, "-acme-email", "ops@flurry.test",
		"-acme-cert-cache", filepath.Join(t.TempDir(), "acme"),
		"-acme-directory", ca.Directory, "-acme-http-addr", ca.HTTPAddr)
	cert := ca.Verify(t, addr, host)
	if err := cert.VerifyHostname(host); err != nil {
		t.Error(err)
	}
}
