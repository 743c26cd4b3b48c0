package main

import (
	"os"
	"testing"

	"github.com/flurrypt/flurry/internal/testkit/pebbletest"
)

func TestMain(m *testing.M) { os.Exit(pebbletest.Main(m, main)) }

// TestACME: with -acme-hostnames the relay gets its certificate from an
// ACME server (pebble, validating HTTP-01 on loopback) and serves TLS with
// it, with the flags docs/operators.md's unit uses.
func TestACME(t *testing.T) {
	ca := pebbletest.Start(t)
	ca.ServeTLS(t, "relay.flurry.test", "-forward", pebbletest.FreeAddr(t))
}
