package main

import (
	"os"
	"runtime"
	"runtime/debug"
)

// gcPercent is flurry-proxy's GOGC unless the environment sets one. The
// WebRTC stack (pion's DTLS and SCTP) allocates a few short-lived buffers
// per packet, so at Go's default of 100 the collector and the scavenger
// returning its pages took a fifth of the CPU of a bulk transfer; at 400 a
// transfer costs about a fifth less CPU per MB for some 20 MiB more
// resident memory (docs/performance.md, "Chain").
const gcPercent = 400

// maxProcs is flurry-proxy's GOMAXPROCS unless the environment sets one.
// pion's DTLS starts two goroutines for every record it sends and waits for
// one of them; with a second processor idle, each start also wakes a
// thread to look for work, and that scheduling cost a quarter of the
// proxy's CPU per MB relayed. On one processor the proxy relays a client at
// some 40 MB/s, far above what volunteers' links carry, and never takes
// more than one core of a volunteer's machine; an operator relaying more
// sets GOMAXPROCS (docs/proxy.md).
const maxProcs = 1

func init() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(maxProcs)
	}
}
