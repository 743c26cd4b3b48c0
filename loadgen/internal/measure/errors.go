package measure

import (
	"errors"
)

// ErrNotLoopback is returned when a target is not a loopback address and
// AllowNonLoopback is not set.
var ErrNotLoopback = errors.New("target is not a loopback address (set AllowNonLoopback, flag -allow-non-loopback, to measure a remote test system)")

// ErrInvalidConfig is returned for a configuration that cannot run.
var ErrInvalidConfig = errors.New("invalid load generator configuration")

// errFileLimit is returned when RLIMIT_NOFILE cannot be raised to what a
// run needs.
var errFileLimit = errors.New("open file limit too low")

// ErrNoProgress is returned when a run ends without a single success (no
// match, no carrier, no byte): the numbers would mean nothing.
var ErrNoProgress = errors.New("run made no progress")
