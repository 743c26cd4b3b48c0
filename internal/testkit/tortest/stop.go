package tortest

import (
	"errors"
	"time"

	"github.com/flurrypt/flurry/internal/childproc"
)

// stopTimeout bounds a tor's exit after SIGTERM. A relay exits at once
// (SIGTERM skips ShutdownWaitLength); a loaded 2-core CI machine has
// taken seconds.
const stopTimeout = 10 * time.Second

// termLogged is what tor logs when SIGTERM reaches its main loop.
const termLogged = "Catching signal TERM"

// Stop stops a tor process (SIGTERM, then SIGKILL after stopTimeout).
//
// Debian 12's tor (0.4.9.11) now and then deadlocks on its way out after
// logging that it caught SIGTERM: its main thread waits for good in
// cpuworker_free_all on a lock of its worker pool (seen with gdb on
// 2026-12-02; it struck in two of five runs of TestTorBackendsThroughFlurry
// under the race detector). Such a tor is killed and described in hang,
// which is not a failure of the test; err holds every other failure: an
// exit status, a tor that never logged the signal, processes left in its
// group.
func Stop(p *childproc.Process) (hang, err error) {
	var hangs, others []error
	for _, e := range unjoin(p.Stop(stopTimeout)) {
		if errors.Is(e, childproc.ErrStopTimeout) && len(GrepFile(p.LogPath(), termLogged)) > 0 {
			hangs = append(hangs, e)
		} else {
			others = append(others, e)
		}
	}
	return errors.Join(hangs...), errors.Join(others...)
}

// unjoin returns the errors err joins (err itself if it joins none; none
// if it is nil).
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}
