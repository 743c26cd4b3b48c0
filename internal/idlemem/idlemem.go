// Package idlemem keeps a long-running server's resident size close to
// what it holds: a lower GOGC than Go's default, and the garbage and free
// pages of a burst returned to the operating system once the server has
// gone quiet; and, for a server that also allocates fast (the broker under
// load), room to collect less often while it does. The relay and the broker
// use it; both hold thousands of mostly idle connections and run out of
// memory before CPU.
package idlemem

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// GCPercent is the GOGC that Start sets unless the environment sets one:
// collecting at 50% growth instead of 100% keeps the garbage each new
// connection leaves (its request, its TLS handshake) from inflating the
// resident size, for a few percent of throughput.
const GCPercent = 50

// Start sets GOGC to GCPercent unless the environment sets GOGC, and
// starts a goroutine that returns idle memory once a quiet interval has
// passed (see returnIdle). Call it once, first thing in main.
func Start(quiet time.Duration) {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
	go returnIdle(quiet)
}

// returnIdle collects garbage and returns free memory to the operating
// system whenever an interval has passed without a collection but with
// allocation since the last time it did so. A busy process collects by
// itself and is left alone; one that has gone quiet after a burst (a flood
// of connections, a large download) would otherwise keep the burst's
// garbage until Go's two-minute forced collection, and its free pages
// until the background scavenger gets to them. It never returns.
func returnIdle(interval time.Duration) {
	r := newReturner()
	for range time.Tick(interval) {
		r.tick()
	}
}

// returner is returnIdle's state between two ticks.
type returner struct {
	samples    []metrics.Sample
	lastCycles uint64 // collections counted at the last tick
	freedAt    uint64 // bytes allocated in all when memory was last returned
}

func newReturner() *returner {
	r := &returner{samples: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}}
	r.lastCycles, r.freedAt = r.read()
	return r
}

func (r *returner) read() (cycles, allocs uint64) {
	metrics.Read(r.samples)
	return r.samples[0].Value.Uint64(), r.samples[1].Value.Uint64()
}

// tick returns memory if no collection ran since the last tick and the
// process allocated since memory was last returned; it reports whether it
// did.
func (r *returner) tick() bool {
	cycles, allocs := r.read()
	freed := cycles == r.lastCycles && allocs != r.freedAt
	if freed {
		// Two collections: what sync.Pools held at the first (the read
		// buffers of a burst of connections that then went idle)
		// survives it in their victim caches.
		runtime.GC()
		debug.FreeOSMemory()
		cycles, r.freedAt = r.read()
	}
	r.lastCycles = cycles
	return freed
}

// Help is the environment section of a -h that calls Start(quiet) and,
// if window is not 0, FollowAllocation(window).
func Help(quiet, window time.Duration) string {
	h := fmt.Sprintf("\nEnvironment:\n  GOGC  the Go collector's target (default %d: less memory per connection);\n", GCPercent)
	if window > 0 {
		h += fmt.Sprintf("        raised while allocating fast, to leave the last %v's allocation as room;\n", window)
	}
	return h + fmt.Sprintf("        free memory goes back to the system after %v without a collection\n", quiet)
}
