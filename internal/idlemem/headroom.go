package idlemem

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"time"
)

// Headroom bounds: the collector's target is recomputed every
// headroomTick from the least allocated in the last sustainTicks ticks (a
// burst shorter than that, a wave of connections, changes nothing), and
// the room it leaves never exceeds maxHeadroom beyond the live heap, nor
// its GOGC maxGCPercent.
const (
	headroomTick = 100 * time.Millisecond
	sustainTicks = 10
	maxHeadroom  = 64 << 20
	maxGCPercent = 2000
)

// FollowAllocation starts a goroutine that, unless the environment sets
// GOGC, lets the heap grow between two collections by at least what the
// process allocates in a window at the rate it has kept for the last
// second (at most 64 MiB): a server allocating fast and steadily collects
// about once a window instead of after every GCPercent of a small live
// heap, each collection's fixed cost (the goroutine stacks, the roots)
// paid that much less often, while a quiet one, one whose allocation comes
// in bursts, or one whose live heap is large, stays at GCPercent. Call it
// after Start.
func FollowAllocation(window time.Duration) {
	if os.Getenv("GOGC") != "" {
		return
	}
	go followAllocation(window)
}

func followAllocation(window time.Duration) {
	f := newFollower(window)
	for range time.Tick(headroomTick) {
		if p, changed := f.tick(); changed {
			debug.SetGCPercent(p)
		}
	}
}

// follower is followAllocation's state between two ticks.
type follower struct {
	window  time.Duration
	samples []metrics.Sample
	allocs  uint64               // bytes allocated in all at the last tick
	recent  [sustainTicks]uint64 // bytes allocated in each of the last ticks
	next    int                  // the index in recent of the oldest
	percent int                  // the GOGC set last
}

func newFollower(window time.Duration) *follower {
	f := &follower{window: window, percent: GCPercent,
		samples: []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}}
	metrics.Read(f.samples)
	f.allocs = f.samples[0].Value.Uint64()
	return f
}

// tick reads the allocation since the last tick and the live heap, and
// returns the GOGC the least allocation of the last sustainTicks ticks
// calls for, and whether it differs from the last.
func (f *follower) tick() (int, bool) {
	metrics.Read(f.samples)
	allocs, live := f.samples[0].Value.Uint64(), f.samples[1].Value.Uint64()
	f.recent[f.next] = allocs - f.allocs
	f.next = (f.next + 1) % sustainTicks
	f.allocs = allocs
	p := headroomPercent(slices.Min(f.recent[:]), headroomTick, f.window, live)
	if p == f.percent {
		return p, false
	}
	f.percent = p
	return p, true
}

// headroomPercent is the GOGC under which a heap of live bytes may grow by
// what allocated bytes in tick would come to over window (at most
// maxHeadroom), and never below GCPercent nor above maxGCPercent. Values
// are rounded up to a multiple of 25 so that small changes in the rate
// leave it alone.
func headroomPercent(allocated uint64, tick, window time.Duration, live uint64) int {
	room := min(float64(allocated)*float64(window)/float64(tick), maxHeadroom)
	if live == 0 {
		live = 1
	}
	p := int(math.Ceil(room*100/float64(live)/25)) * 25
	return min(max(p, GCPercent), maxGCPercent)
}
