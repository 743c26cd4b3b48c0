// Package envprofile lets a binary write pprof profiles of itself when the
// environment asks for it, so that the real chain of processes can be
// profiled without a flag in every role. A main imports it for its side
// effect:
//
//	import _ "github.com/flurrypt/flurry/internal/envprofile"
//
// With FLURRY_PROFILE_DIR set to a directory, the process profiles its CPU
// from start-up for FLURRY_PROFILE_SECONDS (default 30; choose it so that
// the process is still running then, as nothing is written at exit) and
// then writes
// <dir>/<binary>-<pid>.cpu.pprof and, taken at the same moment,
// <dir>/<binary>-<pid>.allocs.pprof (allocations since start-up). Without
// FLURRY_PROFILE_DIR it does nothing.
package envprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"
)

// Environment variables read at start-up.
const (
	DirEnv     = "FLURRY_PROFILE_DIR"
	SecondsEnv = "FLURRY_PROFILE_SECONDS"
)

const defaultSeconds = 30

func init() {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		return
	}
	secs := defaultSeconds
	if s := os.Getenv(SecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > 3600 {
			fmt.Fprintf(os.Stderr, "envprofile: %s must be a number of seconds between 1 and 3600\n", SecondsEnv)
			return
		}
		secs = n
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(os.Args[0]), os.Getpid()))
	if err := start(base, time.Duration(secs)*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "envprofile:", err)
	}
}

// start profiles the CPU for d, then writes both profiles under base.
func start(base string, d time.Duration) error {
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	go func() {
		time.Sleep(d)
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "envprofile:", err)
		}
		if err := writeProfile("allocs", base+".allocs.pprof"); err != nil {
			fmt.Fprintln(os.Stderr, "envprofile:", err)
		}
	}()
	return nil
}

func writeProfile(name, path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
