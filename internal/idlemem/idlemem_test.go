package idlemem

import (
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

var sink []byte

func released() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestReturnsAfterQuietBurst: after a burst of garbage and no collection,
// a tick collects and gives the pages back; a tick with nothing new does
// nothing, and neither does one after a collection of the process's own.
func TestReturnsAfterQuietBurst(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but the test's
	r := newReturner()

	for range 64 {
		sink = make([]byte, 1<<20) // 64 MiB of garbage in all
	}
	sink = nil
	before := released()
	if !r.tick() {
		t.Fatal("a quiet tick after a burst returned nothing")
	}
	if got := released(); got < before+32<<20 {
		t.Errorf("released heap grew by %d MiB, want at least 32 of the burst's 64", (got-before)>>20)
	}

	if r.tick() {
		t.Error("a tick with nothing allocated since returned memory again")
	}

	sink = make([]byte, 1<<20)
	sink = nil
	debug.FreeOSMemory() // a collection of the process's own: it is busy
	sink = make([]byte, 1<<20)
	sink = nil
	if r.tick() {
		t.Error("a tick after the process's own collection returned memory")
	}
}

func TestHelpNamesTheDefaults(t *testing.T) {
	h := Help(2*time.Second, 0)
	for _, want := range []string{"GOGC", "default 50", "after 2s"} {
		if !strings.Contains(h, want) {
			t.Errorf("Help lacks %q:\n%s", want, h)
		}
	}
	if strings.Contains(h, "allocating") {
		t.Errorf("Help without a window mentions one:\n%s", h)
	}
	if h := Help(2*time.Second, 250*time.Millisecond); !strings.Contains(h, "last 250ms") {
		t.Errorf("Help with a window lacks it:\n%s", h)
	}
}

func TestHeadroomPercent(t *testing.T) {
	const tick, window = 100 * time.Millisecond, 250 * time.Millisecond
	for _, c := range []struct {
		name            string
		allocated, live uint64
		want            int
	}{
		{"quiet", 0, 8 << 20, GCPercent},
		{"slow, under GCPercent", 1 << 20, 8 << 20, GCPercent}, // 2.5 MiB of room < 4 MiB
		{"fast, small heap", 8 << 20, 8 << 20, 250},            // 20 MiB of room
		{"rounded up", 8<<20 + 1<<10, 8 << 20, 275},            // a little over 250
		{"capped room", 64 << 20, 16 << 20, 400},               // 64 MiB, not 160
		{"large heap", 8 << 20, 200 << 20, GCPercent},          // 20 MiB < 100 MiB
		{"capped percent", 64 << 20, 1 << 20, maxGCPercent},    // 6 400% capped
		{"empty heap", 1 << 20, 0, maxGCPercent},               // no division by zero
	} {
		if got := headroomPercent(c.allocated, tick, window, c.live); got != c.want {
			t.Errorf("%s: headroomPercent(%d, %d) = %d, want %d", c.name, c.allocated, c.live, got, c.want)
		}
	}
}

// TestFollowerTicks: fast allocation raises GOGC only once it has lasted
// sustainTicks ticks, a quiet tick brings it back, and a tick that changes
// nothing says so.
func TestFollowerTicks(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1)) // no collection but the test's
	f := newFollower(time.Second)
	for i := range sustainTicks {
		for range 4 {
			sink = make([]byte, 1<<20)
		}
		sink = nil
		p, changed := f.tick()
		if last := i == sustainTicks-1; last && (!changed || p <= GCPercent) {
			t.Errorf("after %d busy ticks: tick = %d, %v; want above %d, changed", i+1, p, changed, GCPercent)
		} else if !last && (changed || p != GCPercent) {
			t.Errorf("after %d busy ticks: tick = %d, %v; want %d, unchanged", i+1, p, changed, GCPercent)
		}
	}
	if p, changed := f.tick(); !changed || p != GCPercent {
		t.Errorf("quiet tick = %d, %v; want %d, changed", p, changed, GCPercent)
	}
	if p, changed := f.tick(); changed || p != GCPercent {
		t.Errorf("second quiet tick = %d, %v; want %d, unchanged", p, changed, GCPercent)
	}
}
