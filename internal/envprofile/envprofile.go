// Package envprofile lets a binary write pprof profiles of itself when the
// environment asks for it, so that the real chain of processes can be
// profiled without a flag in every role. A main imports it for its side
// effect:
//
//	import _ "github.com/flurrypt/flurry/internal/envprofile"
//
// With FLURRY_PROFILE_DIR set to a directory, the process profiles its CPU
// from start-up until SIGTERM or SIGINT (or for FLURRY_PROFILE_SECONDS, if
// set, whichever comes first) and then writes <dir>/<binary>-<pid>.cpu.pprof
// and, taken at the same moment, <dir>/<binary>-<pid>.allocs.pprof
// (allocations since start-up). The signal still reaches the main's own
// handler. Without FLURRY_PROFILE_DIR it does nothing.
package envprofile

import (
	"fmt"
	"os"
	"path/filepath"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"
)

// Environment variables read at start-up.
const (
	DirEnv     = "FLURRY_PROFILE_DIR"
	SecondsEnv = "FLURRY_PROFILE_SECONDS"
)

// maxSeconds bounds FLURRY_PROFILE_SECONDS and is the default.
const maxSeconds = 24 * 3600

func init() {
	dir := os.Getenv(DirEnv)
	if dir == "" {
		return
	}
	secs := maxSeconds
	if s := os.Getenv(SecondsEnv); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 || n > maxSeconds {
			fmt.Fprintf(os.Stderr, "envprofile: %s must be a number of seconds between 1 and %d\n", SecondsEnv, maxSeconds)
			return
		}
		secs = n
	}
	base := filepath.Join(dir, fmt.Sprintf("%s-%d", filepath.Base(os.Args[0]), os.Getpid()))
	if err := start(base, time.Duration(secs)*time.Second); err != nil {
		fmt.Fprintln(os.Stderr, "envprofile:", err)
	}
}

// start profiles the CPU for d or until SIGTERM or SIGINT, then writes
// both profiles under base.
func start(base string, d time.Duration) error {
	f, err := os.Create(base + ".cpu.pprof")
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, os.Interrupt)
	go func() {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-sig:
		}
		signal.Stop(sig)
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
