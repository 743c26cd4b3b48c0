package loadgen

import "errors"

var (
	// ErrNotLoopback is returned when a target is not a loopback address
	// and AllowNonLoopback is not set.
	ErrNotLoopback = errors.New("target is not a loopback address (set AllowNonLoopback, flag -allow-non-loopback, to measure a remote test system)")
	// ErrInvalidConfig is returned for a configuration that cannot run.
	ErrInvalidConfig = errors.New("invalid load generator configuration")
	// errFileLimit is returned when RLIMIT_NOFILE cannot be raised to what
	// a run needs.
	errFileLimit = errors.New("open file limit too low")
	// ErrProcStats is returned when a process's statistics cannot be read.
	ErrProcStats = errors.New("cannot read process statistics")
	// ErrSOCKS is returned when a SOCKS5 proxy refuses or garbles a
	// connection.
	ErrSOCKS = errors.New("socks5")
	// ErrNoProgress is returned when a run ends without a single success
	// (no match, no carrier, no byte): the numbers would mean nothing.
	ErrNoProgress = errors.New("run made no progress")
)
