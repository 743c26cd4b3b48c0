package brokerwire

import (
	"sync/atomic"
)

// StepCounters are one step's client counts.
type StepCounters struct {
	Offers, Matches, Denials, Timeouts, Errors, Missed atomic.Int64
}
