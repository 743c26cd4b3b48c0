// Package pionruntime sets the Go runtime defaults of the binaries whose
// work is pion's WebRTC stack (flurry-client and flurry-proxy): a higher
// GOGC and one processor, each unless the environment sets it. A main
// calls Apply first thing; its -h names the values (docs/performance.md,
// "Chain", has the measurements).
package pionruntime

import (
	"os"
	"runtime"
	"runtime/debug"
)

// GCPercent is the GOGC Apply sets. pion's DTLS and SCTP allocate a few
// short-lived buffers per packet, so at Go's default of 100 the collector
// and the scavenger returning its pages took a fifth of the CPU of a bulk
// transfer; at 400 a transfer costs about a fifth less CPU per MB for some
// 20 MiB more resident memory.
const GCPercent = 400

// MaxProcs is the GOMAXPROCS Apply sets. pion's DTLS starts two goroutines
// for every record it sends and waits for one of them; with a second
// processor idle, each start also wakes a thread to look for work, which
// cost the proxy a quarter of its CPU per MB relayed and the client about
// as much. On one processor a proxy relays some 40 MB/s, far above what
// volunteers' links carry, and never takes more than one core of a
// volunteer's machine; one user's client never needs more. An operator
// relaying more sets GOMAXPROCS (docs/proxy.md).
const MaxProcs = 1

// Apply sets GOGC to GCPercent and GOMAXPROCS to MaxProcs, each unless the
// environment sets it.
func Apply() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(MaxProcs)
	}
}
