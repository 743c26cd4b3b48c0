package statuspage

import "errors"

var (
	// ErrNoStats is returned by New when Config.Stats is nil.
	ErrNoStats = errors.New("status page needs a stats recorder")
	// ErrInvalidRefresh is returned by New for a Config.Refresh below
	// MinRefresh.
	ErrInvalidRefresh = errors.New("invalid status page refresh interval")
)
