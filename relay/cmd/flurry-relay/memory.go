package main

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// memoryCheckInterval is how often the relay looks whether it has gone
// quiet (see returnIdleMemory).
const memoryCheckInterval = 15 * time.Second

// returnIdleMemory collects garbage and returns free memory to the
// operating system whenever an interval has passed without a collection
// but with allocation since the last time it did so. A busy relay collects
// by itself and is left alone; a relay that has gone quiet after a burst
// (a flood of connections, a large download) would otherwise keep the
// burst's garbage until Go's two-minute forced collection, and its free
// pages until the background scavenger gets to them. It never returns.
func returnIdleMemory(interval time.Duration) {
	samples := []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}, {Name: "/gc/heap/allocs:bytes"}}
	read := func() (cycles, allocs uint64) {
		metrics.Read(samples)
		return samples[0].Value.Uint64(), samples[1].Value.Uint64()
	}
	lastCycles, freedAt := read()
	for range time.Tick(interval) {
		cycles, allocs := read()
		if cycles == lastCycles && allocs != freedAt {
			// Two collections: what sync.Pools held at the first (the
			// read buffers of a burst of carriers that then parked)
			// survives it in their victim caches.
			runtime.GC()
			debug.FreeOSMemory()
			cycles, allocs = read()
			freedAt = allocs
		}
		lastCycles = cycles
	}
}
