package envprofile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStartWritesProfiles profiles for a moment and waits for both files.
func TestStartWritesProfiles(t *testing.T) {
	base := filepath.Join(t.TempDir(), "p")
	if err := start(base, 10*time.Millisecond); err != nil {
		t.Skipf("CPU profiling unavailable here (-cpuprofile set?): %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		cpu, err1 := os.Stat(base + ".cpu.pprof")
		allocs, err2 := os.Stat(base + ".allocs.pprof")
		if err1 == nil && err2 == nil && cpu.Size() > 0 && allocs.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("profiles not written: %v, %v", err1, err2)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
