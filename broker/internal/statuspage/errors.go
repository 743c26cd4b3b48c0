package statuspage

import "errors"

var (
	// ErrInvalidConfig is returned by New when Config.Stats is nil or
	// Config.Refresh is below MinRefresh.
	ErrInvalidConfig = errors.New("invalid status page config")
)
