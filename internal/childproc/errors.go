package childproc

import "errors"

var (
	// errInvalidConfig reports a Config that cannot work.
	errInvalidConfig = errors.New("invalid child process configuration")
	// errNotReady reports a process that did not become ready before its
	// deadline.
	errNotReady = errors.New("process not ready")
	// errExited reports a process that exited while it was expected to run.
	errExited = errors.New("process exited")
	// errRunning reports Start on a process that is already running.
	errRunning = errors.New("process already running")
	// ErrStopTimeout reports a process that had to be killed because it did
	// not exit within the grace period after SIGTERM.
	ErrStopTimeout = errors.New("process did not exit after SIGTERM")
	// errLeftBehind reports processes that were still in a process group
	// after its leader exited (they are killed).
	errLeftBehind = errors.New("processes left behind")
)
