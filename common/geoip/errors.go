package geoip

import (
	"errors"
	"fmt"
)

// Sentinel errors. Load wraps them, naming the file (and, for
// problems with one line, the line in a *LineError).
var (
	// ErrNoFile is returned when neither an IPv4 nor an IPv6 source is given.
	ErrNoFile = errors.New("no geoip file given")
	// ErrEmpty is returned for a file that holds no ranges.
	ErrEmpty = errors.New("no ranges in geoip file")
	// ErrTooLarge is returned for a file above the size or range-count limit.
	ErrTooLarge = errors.New("geoip file too large")
	// ErrLineTooLong is returned for a line longer than the line limit.
	ErrLineTooLong = errors.New("line too long")
	// ErrSyntax is returned for a line that is not LOW,HIGH,CC.
	ErrSyntax = errors.New("malformed line")
	// ErrBadAddress is returned for a LOW or HIGH that is not an address of
	// the file's family.
	ErrBadAddress = errors.New("bad address")
	// ErrBadCountry is returned for a country code outside [A-Z0-9]{2} and "??".
	ErrBadCountry = errors.New("bad country code")
	// ErrRange is returned for a range whose low end is above its high end.
	ErrRange = errors.New("low end above high end")
	// ErrOverlap is returned for a range that overlaps another one.
	ErrOverlap = errors.New("overlapping ranges")
)

// LineError reports a problem with one line of a geoip file.
type LineError struct {
	File string // file name, or "ipv4"/"ipv6" for Parse
	Line int    // 1-based line number
	Err  error  // wraps one of the sentinel errors
}

func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *LineError) Unwrap() error { return e.Err }
