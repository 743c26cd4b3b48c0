// Package ipcount counts the distinct addresses of polling proxies, as
// Snowflake's broker does with -ip-count-prefix and -ip-count-interval:
// per interval, in six categories (restricted, unrestricted, standalone,
// browser, mobile, unknown), each written to its own file
// <prefix>-<category>-<start, RFC 3339>.log, one JSON line per interval:
//
//	{"recordingStart":"2026-11-30T22:00:00Z","recordingEnd":"2026-11-30T23:00:00Z","count":16}
//
// It keeps the count as private as the broker's metrics descriptor: an
// address is held only as a 64-bit keyed hash (hash/maphash with a seed
// made at start and never written), the set is dropped at the end of each
// interval, and the count written is rounded up to a multiple of 8.
// Snowflake writes a HyperLogLog sketch of HMACed addresses instead, so
// its distinctcounter tool does not read these files; the file names,
// categories and periods are Snowflake's.
//
// The counter is an event.Sink: it sees every well-formed proxy poll,
// whether it entered a pool or was refused for its relay pattern (where
// Snowflake records it too).
package ipcount

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"sync"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

// Defaults for zero Config fields.
const (
	DefaultInterval = time.Hour
	DefaultMaxAddrs = 1 << 18
)

// Categories are the files' categories, in Snowflake's names.
var categories = [...]string{"restricted", "unrestricted", "standalone", "browser", "mobile", "unknown"}

const (
	catRestricted = iota
	catUnrestricted
	catStandalone
	catBrowser
	catMobile
	catUnknown
)

// errInvalidConfig reports an unusable Config.
var errInvalidConfig = errors.New("invalid ip count config")

// Config says where and how often to write.
type Config struct {
	// Prefix starts every file name (a path). Required.
	Prefix string
	// Interval is the counting period; 0 means DefaultInterval.
	Interval time.Duration
	// MaxAddrs bounds each category's set per interval (about 50 bytes
	// an address); past it the count is written as at least MaxAddrs
	// ("saturated"). 0 means DefaultMaxAddrs.
	MaxAddrs int
}

// Counter counts addresses; its methods are safe for concurrent use.
type Counter struct {
	event.Nop
	cfg   Config
	seed  maphash.Seed
	files [len(categories)]*os.File

	mu        sync.Mutex
	start     time.Time
	sets      [len(categories)]map[uint64]struct{}
	saturated [len(categories)]bool
}

// New creates the six files (truncating any of the same name) and returns
// a Counter whose first interval starts now.
func New(cfg Config) (*Counter, error) {
	if cfg.Prefix == "" {
		return nil, fmt.Errorf("%w: no file prefix", errInvalidConfig)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Interval < time.Second {
		return nil, fmt.Errorf("%w: interval %v is shorter than 1s", errInvalidConfig, cfg.Interval)
	}
	if cfg.MaxAddrs <= 0 {
		cfg.MaxAddrs = DefaultMaxAddrs
	}
	c := &Counter{cfg: cfg, seed: maphash.MakeSeed(), start: time.Now()}
	for i, name := range categories {
		path := fmt.Sprintf("%s-%s-%s.log", cfg.Prefix, name, c.start.UTC().Format(time.RFC3339))
		f, err := os.OpenFile(path, os.O_TRUNC|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			c.closeFiles()
			return nil, fmt.Errorf("%w: %w", errInvalidConfig, err)
		}
		c.files[i] = f
		c.sets[i] = map[uint64]struct{}{}
	}
	return c, nil
}

// ProxyPollStarted counts a poll that entered a pool.
func (c *Counter) ProxyPollStarted(p event.Proxy) { c.add(p) }

// ProxyPollRejected counts a poll refused for its relay pattern.
func (c *Counter) ProxyPollRejected(p event.Proxy) { c.add(p) }

func (c *Counter) add(p event.Proxy) {
	if !p.Addr.IsValid() {
		return
	}
	a := p.Addr.Unmap().As16()
	h := maphash.Bytes(c.seed, a[:])
	nat := catRestricted
	if p.NAT == messages.NATUnrestricted {
		nat = catUnrestricted
	}
	kind := catUnknown
	switch p.Type {
	case messages.ProxyTypeStandalone:
		kind = catStandalone
	case messages.ProxyTypeWebExt, messages.ProxyTypeBadge:
		kind = catBrowser
	case messages.ProxyTypeIPTProxy:
		kind = catMobile
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range [2]int{nat, kind} {
		if len(c.sets[i]) < c.cfg.MaxAddrs {
			c.sets[i][h] = struct{}{}
		} else if _, ok := c.sets[i][h]; !ok {
			c.saturated[i] = true
		}
	}
}

// line is one interval of one category.
type line struct {
	RecordingStart time.Time `json:"recordingStart"`
	RecordingEnd   time.Time `json:"recordingEnd"`
	Count          int       `json:"count"`
	Saturated      bool      `json:"saturated,omitempty"`
}

// Flush ends the interval: it appends each category's binned count to its
// file, forgets the addresses and starts the next interval.
func (c *Counter) Flush() error {
	now := time.Now()
	c.mu.Lock()
	var lines [len(categories)]line
	for i := range categories {
		lines[i] = line{RecordingStart: c.start.UTC(), RecordingEnd: now.UTC(), Count: bin(len(c.sets[i])), Saturated: c.saturated[i]}
		c.sets[i] = map[uint64]struct{}{}
		c.saturated[i] = false
	}
	c.start = now
	c.mu.Unlock()
	var errs []error
	for i, l := range lines {
		b, err := json.Marshal(l)
		if err == nil {
			_, err = c.files[i].Write(append(b, '\n'))
		}
		if err == nil {
			err = c.files[i].Sync()
		}
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// bin rounds n up to a multiple of 8, as the metrics descriptor does.
func bin(n int) int { return (n + 7) / 8 * 8 }

// Run flushes every Interval until ctx ends, then flushes the partial
// interval and closes the files. It returns the first write error, after
// ctx ends.
func (c *Counter) Run(ctx context.Context) error {
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	var first error
	for {
		select {
		case <-ctx.Done():
			if err := c.Flush(); first == nil {
				first = err
			}
			c.closeFiles()
			return first
		case <-t.C:
			if err := c.Flush(); first == nil {
				first = err
			}
		}
	}
}

func (c *Counter) closeFiles() {
	for _, f := range c.files {
		if f != nil {
			f.Close()
		}
	}
}
