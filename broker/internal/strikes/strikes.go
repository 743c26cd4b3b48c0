package strikes

import (
	"fmt"
	"hash/maphash"
	"math"
	"net/netip"
	"sync"
	"time"
)

// Defaults for Config fields left at their zero value.
const (
	// DefaultPeriod is how long a strike counts at most.
	DefaultPeriod = time.Hour
	// DefaultMaxEntries bounds the keys of one generation.
	DefaultMaxEntries = 1 << 16
)

// Config configures a Table. The zero value works.
type Config struct {
	// Period is the longest a strike counts: a strike counts for more than
	// Period/2 and at most Period. Zero means DefaultPeriod; negative is an
	// error.
	Period time.Duration
	// MaxEntries bounds the keys of the current generation (the table holds
	// at most twice as many). Zero means DefaultMaxEntries; negative is an
	// error.
	MaxEntries int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Table counts strikes per key. It is safe for concurrent use. The zero
// value is not usable; call New.
type Table struct {
	seed maphash.Seed
	half time.Duration // length of one generation, > 0
	max  int
	now  func() time.Time

	mu      sync.Mutex
	start   time.Time         // start of the current generation, on the grid; guarded by mu
	cur     map[uint64]uint32 // nil until the generation's first strike; guarded by mu
	prev    map[uint64]uint32 // nil if it had none; guarded by mu
	dropped uint64            // strikes not recorded because cur was full; guarded by mu
}

// New returns an empty table for cfg.
func New(cfg Config) (*Table, error) {
	if cfg.Period == 0 {
		cfg.Period = DefaultPeriod
	}
	if cfg.MaxEntries == 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Period < 0 {
		return nil, fmt.Errorf("%w: period %v is negative", ErrInvalidConfig, cfg.Period)
	}
	if cfg.MaxEntries < 0 {
		return nil, fmt.Errorf("%w: max entries %d is negative", ErrInvalidConfig, cfg.MaxEntries)
	}
	return &Table{
		seed:  maphash.MakeSeed(),
		half:  max(cfg.Period/2, 1),
		max:   cfg.MaxEntries,
		now:   cfg.Now,
		start: cfg.Now(),
	}, nil
}

// Key returns the table's key for the proxy at addr: a keyed hash of addr
// masked to /32 (IPv4, also when written as IPv4-mapped IPv6) or /64
// (IPv6), zone dropped. It is never zero, so callers may use zero for "no
// proxy". Every invalid addr has one and the same key. Key does not
// allocate and does not touch the table.
func (t *Table) Key(addr netip.Addr) uint64 {
	addr = addr.Unmap()
	if addr.Is6() {
		p, _ := addr.Prefix(64) // cannot fail: 64 bits of an IPv6 address
		addr = p.Addr()
	}
	h := maphash.Comparable(t.seed, addr.As16())
	if !addr.IsValid() {
		// As16 of the zero Addr is all zeros, like ::/64: keep them apart.
		h = ^h
	}
	if h == 0 {
		h = 1
	}
	return h
}

// Add records a strike against key and returns the key's count after it
// (unchanged if the current generation was full). A zero key is ignored.
func (t *Table) Add(key uint64) int {
	if key == 0 {
		return 0
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotate(now)
	n, ok := t.cur[key]
	switch {
	case ok:
		if n < math.MaxUint32 {
			t.cur[key] = n + 1
		}
	case len(t.cur) < t.max:
		if t.cur == nil {
			t.cur = make(map[uint64]uint32)
		}
		t.cur[key] = 1
	default:
		t.dropped++
	}
	return t.count(key)
}

// Count returns the strikes against key that still count: those of the
// current and the previous generation. It does not allocate.
func (t *Table) Count(key uint64) int {
	if key == 0 {
		return 0
	}
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotate(now)
	return t.count(key)
}

// Len returns the number of keys in the current and the previous
// generation (a key in both counts twice).
func (t *Table) Len() int {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rotate(now)
	return len(t.cur) + len(t.prev)
}

// Dropped returns how many strikes were not recorded because the current
// generation was full.
func (t *Table) Dropped() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.dropped
}

// count is Count's sum. Caller holds mu.
func (t *Table) count(key uint64) int {
	return int(t.cur[key]) + int(t.prev[key])
}

// rotate moves to the generation that contains now. Caller holds mu.
func (t *Table) rotate(now time.Time) {
	elapsed := now.Sub(t.start)
	if elapsed < t.half {
		return // includes a clock that went backwards
	}
	// Fresh maps rather than clear: a generation that grew in a burst
	// gives its memory back.
	n := elapsed / t.half
	if n == 1 {
		t.prev, t.cur = t.cur, nil
	} else {
		t.prev, t.cur = nil, nil
	}
	t.start = t.start.Add(n * t.half)
}
