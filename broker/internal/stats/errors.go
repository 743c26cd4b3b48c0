package stats

import "errors"

var (
	// ErrInvalidConfig is returned by New for a Config.Interval shorter
	// than a second (the descriptor states it in seconds) or a negative
	// Config.MaxProxyIPs.
	ErrInvalidConfig = errors.New("invalid stats config")
	// ErrMetricsLog is returned (wrapped with the cause) by New when the
	// metrics log cannot be opened for appending.
	ErrMetricsLog = errors.New("cannot open metrics log")
	// ErrRegister is returned (wrapped with the cause) by New when the
	// Recorder's metrics cannot be registered, for example because the
	// registry already holds a Recorder.
	ErrRegister = errors.New("cannot register metrics")
)
