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
	h := Help(2 * time.Second)
	for _, want := range []string{"GOGC", "default 50", "after 2s"} {
		if !strings.Contains(h, want) {
			t.Errorf("Help lacks %q:\n%s", want, h)
		}
	}
}
