package demo

import "errors"

var (
	// ErrInvalidConfig reports a Config or ProcessConfig that cannot work.
	ErrInvalidConfig = errors.New("invalid demo configuration")
	// errBuild reports a failed go build.
	errBuild = errors.New("build failed")
	// ErrNotReady reports a process that did not become ready before its
	// deadline.
	ErrNotReady = errors.New("process not ready")
	// ErrExited reports a process that exited while it was expected to run.
	ErrExited = errors.New("process exited")
	// ErrRunning reports Start on a process that is already running.
	ErrRunning = errors.New("process already running")
	// ErrStopTimeout reports a process that had to be killed because it did
	// not exit within the grace period after SIGTERM.
	ErrStopTimeout = errors.New("process did not exit after SIGTERM")
	// ErrLeftBehind reports processes that were still in a process group
	// after its leader exited (they are killed).
	ErrLeftBehind = errors.New("processes left behind")
	// ErrSOCKS reports a SOCKS5 protocol failure.
	ErrSOCKS = errors.New("socks5")
	// ErrChecksum reports a download whose SHA-256 differs from the file's.
	ErrChecksum = errors.New("checksum mismatch")
	// errClosed reports use of a closed Cluster.
	errClosed = errors.New("cluster closed")
)
