package broker

import "errors"

var (
	// ErrInvalidConfig means a Config field is invalid.
	ErrInvalidConfig = errors.New("invalid broker config")
	// ErrBridgeList means the bridge list could not be loaded or does not
	// fit the allowed relay pattern.
	ErrBridgeList = errors.New("bad bridge list")
	// ErrPollIntervals means the poll-interval file could not be loaded.
	ErrPollIntervals = errors.New("bad poll-interval file")
	// ErrMetrics means the statistics could not be set up (for example,
	// the metrics log cannot be opened for appending).
	ErrMetrics = errors.New("cannot set up metrics")
	// ErrGeoIP means the geoip databases could not be reloaded.
	ErrGeoIP = errors.New("geoip databases not reloaded")
)
