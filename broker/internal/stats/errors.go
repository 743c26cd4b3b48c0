package stats

import "errors"

var (
	// ErrInvalidInterval is returned by New for a negative Config.Interval
	// or one shorter than a second (the descriptor states it in seconds).
	ErrInvalidInterval = errors.New("invalid metrics interval")
	// ErrInvalidMaxProxyIPs is returned by New for a negative
	// Config.MaxProxyIPs.
	ErrInvalidMaxProxyIPs = errors.New("invalid maximum number of tracked proxy addresses")
	// ErrMetricsLog is returned (wrapped with the cause) by New when the
	// metrics log cannot be opened for appending.
	ErrMetricsLog = errors.New("cannot open metrics log")
	// ErrRegister is returned (wrapped with the cause) by New when the
	// Recorder's metrics cannot be registered, for example because the
	// registry already holds a Recorder.
	ErrRegister = errors.New("cannot register metrics")
)
