package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// gcPercent is flurry-client's GOGC unless the environment sets one. The
// WebRTC stack (pion's DTLS and SCTP) allocates a few short-lived buffers
// per packet, so at Go's default of 100 the collector and the scavenger
// returning its pages took a fifth of the CPU of a bulk transfer; at 400 a
// transfer costs about a fifth less CPU per MB for some 20 MiB more
// resident memory (docs/performance.md, "Chain").
const gcPercent = 400

// maxProcs is flurry-client's GOMAXPROCS unless the environment sets one.
// As in flurry-proxy, pion's DTLS starts two goroutines for every record
// it sends, and with a second processor idle each start also woke a
// thread; on one processor a download costs the client about a quarter
// less CPU per MB and, on a machine whose cores the chain shares, goes
// faster (docs/performance.md, "Chain"). One user's traffic never needs
// more than one core.
const maxProcs = 1

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(maxProcs)
	}
}
