package main

import (
	"os"
	"runtime/debug"
)

// gcPercent is flurry-client's GOGC unless the environment sets one. The
// WebRTC stack (pion's DTLS and SCTP) allocates a few short-lived buffers
// per packet, so at Go's default of 100 the collector and the scavenger
// returning its pages took a fifth of the CPU of a bulk transfer; at 400 a
// transfer costs about a fifth less CPU per MB for some 20 MiB more
// resident memory (docs/performance.md, "Chain").
const gcPercent = 400

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}
