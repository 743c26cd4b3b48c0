package broker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// Bounds of a poll interval.
const (
	minPollInterval = time.Second
	maxPollInterval = time.Hour
	// maxPollIntervalFile bounds the size of the poll-interval file.
	maxPollIntervalFile = 64 << 10
)

// pollIntervalFile is Snowflake's poll-interval file, in milliseconds:
//
//	{"unrestricted_poll_interval": 20000, "restricted_poll_interval": 20000}
type pollIntervalFile struct {
	Unrestricted *int64 `json:"unrestricted_poll_interval"`
	Restricted   *int64 `json:"restricted_poll_interval"`
}

// pollIntervals are the NextPoll values of the two pools.
type pollIntervals struct {
	restricted, unrestricted time.Duration
}

// readPollIntervals reads path; a missing key takes def. Unknown keys and
// values outside 1 s to 1 h are errors.
func readPollIntervals(path string, def time.Duration) (pollIntervals, error) {
	f, err := os.Open(path)
	if err != nil {
		return pollIntervals{}, fmt.Errorf("%w: %w", ErrPollIntervals, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPollIntervalFile+1))
	if err != nil {
		return pollIntervals{}, fmt.Errorf("%w: %w", ErrPollIntervals, err)
	}
	if len(data) > maxPollIntervalFile {
		return pollIntervals{}, fmt.Errorf("%w: file larger than %d bytes", ErrPollIntervals, maxPollIntervalFile)
	}
	return parsePollIntervals(data, def)
}

func parsePollIntervals(data []byte, def time.Duration) (pollIntervals, error) {
	var f pollIntervalFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return pollIntervals{}, fmt.Errorf("%w: %w", ErrPollIntervals, err)
	}
	if dec.More() {
		return pollIntervals{}, fmt.Errorf("%w: trailing data", ErrPollIntervals)
	}
	pi := pollIntervals{restricted: def, unrestricted: def}
	for _, v := range []struct {
		name string
		ms   *int64
		dst  *time.Duration
	}{
		{"restricted_poll_interval", f.Restricted, &pi.restricted},
		{"unrestricted_poll_interval", f.Unrestricted, &pi.unrestricted},
	} {
		if v.ms == nil {
			continue
		}
		d := time.Duration(*v.ms) * time.Millisecond
		if *v.ms < minPollInterval.Milliseconds() || *v.ms > maxPollInterval.Milliseconds() {
			return pollIntervals{}, fmt.Errorf("%w: %s %d ms is outside %d to %d", ErrPollIntervals, v.name, *v.ms, minPollInterval.Milliseconds(), maxPollInterval.Milliseconds())
		}
		*v.dst = d
	}
	return pi, nil
}
