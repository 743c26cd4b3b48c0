package manyusers

import (
	"context"
	"fmt"
	"io"
	"math"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
)

// Defaults of RelayUsersConfig.
const (
	DefaultUsersRounds   = 2
	DefaultUsersDuration = 20 * time.Second
	DefaultUsersWarmUp   = 5 * time.Second
)

// Defaults of UserMix.
const (
	DefaultBulkShare     = 0.2
	DefaultRequestBytes  = 512
	DefaultResponseBytes = 20 << 10
	DefaultThinkTime     = 2 * time.Second
)

// User kinds of the many-user runs.
const (
	UserBulk        = "bulk"
	UserInteractive = "interactive"
)

// UserMix is what the users of a many-user run (RunRelayUsers,
// RunProxyUsers) do, each on one stream to a tcptarget.Mixed target: a share
// of them download without pause (bulk), the others send a request, read
// its response, wait, and again (interactive, as someone browsing).
type UserMix struct {
	// BulkShare is the share of users that download, 0 to 1: user i is
	// bulk when floor(i*BulkShare) steps up at i, so the first user is
	// bulk and they spread evenly. Default DefaultBulkShare; negative: no
	// bulk user.
	BulkShare float64
	// RequestBytes and ResponseBytes are the sizes of an interactive
	// user's request and response. Defaults DefaultRequestBytes and
	// DefaultResponseBytes.
	RequestBytes, ResponseBytes int
	// Think is an interactive user's pause after each response. Default
	// DefaultThinkTime.
	Think time.Duration
}

// WithDefaults fills in m's defaults and checks it.
func (m UserMix) WithDefaults() (UserMix, error) {
	if m.BulkShare == 0 {
		m.BulkShare = DefaultBulkShare
	}
	if m.BulkShare < 0 {
		m.BulkShare = 0
	}
	if m.RequestBytes == 0 {
		m.RequestBytes = DefaultRequestBytes
	}
	if m.ResponseBytes == 0 {
		m.ResponseBytes = DefaultResponseBytes
	}
	if m.Think == 0 {
		m.Think = DefaultThinkTime
	}
	switch {
	case m.BulkShare > 1:
		return m, fmt.Errorf("%w: bulk share above 1", measure.ErrInvalidConfig)
	case m.RequestBytes < 0 || m.RequestBytes > tcptarget.MaxMixedRequest:
		return m, fmt.Errorf("%w: request bytes out of range 0..%d", measure.ErrInvalidConfig, tcptarget.MaxMixedRequest)
	case m.ResponseBytes < 1 || m.ResponseBytes > tcptarget.MaxMixedResponse:
		return m, fmt.Errorf("%w: response bytes out of range 1..%d", measure.ErrInvalidConfig, tcptarget.MaxMixedResponse)
	case m.Think < 0:
		return m, fmt.Errorf("%w: negative think time", measure.ErrInvalidConfig)
	}
	return m, nil
}

// kind is user i's kind.
func (m UserMix) kind(i int) string {
	if m.BulkShare > 0 && (i == 0 || math.Floor(float64(i)*m.BulkShare) > math.Floor(float64(i-1)*m.BulkShare)) {
		return UserBulk
	}
	return UserInteractive
}

// user is one simulated user's traffic so far.
type user struct {
	kind     string
	down, up atomic.Int64 // payload bytes read and written
	requests atomic.Int64 // interactive responses read in full
	broken   atomic.Bool  // its stream broke (or never opened) before the run ended
	first    chan struct{}
	once     sync.Once
}

func newUser(kind string) *user { return &user{kind: kind, first: make(chan struct{})} }

func (u *user) gotFirstByte() { u.once.Do(func() { close(u.first) }) }

// Group is the users of one run, with the latencies of interactive
// requests recorded while measuring is set.
type Group struct {
	mix       UserMix
	users     []*user
	Latency   *measure.Recorder
	Measuring atomic.Bool
	errs      *measure.ErrorSamples
	Failed    atomic.Int64 // users whose stream broke before the run ended
	Stopping  atomic.Bool
}

// NewGroup returns n users of mix, who record their errors in errs.
func NewGroup(mix UserMix, n int, errs *measure.ErrorSamples) *Group {
	g := &Group{mix: mix, Latency: measure.NewRecorder(), errs: errs, users: make([]*user, n)}
	for i := range g.users {
		g.users[i] = newUser(mix.kind(i))
	}
	return g
}

// Run is user i's traffic on conn until ctx ends or conn breaks; it closes
// conn.
func (g *Group) Run(ctx context.Context, i int, conn net.Conn) {
	u := g.users[i]
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	defer conn.Close()
	var err error
	if u.kind == UserBulk {
		err = g.bulk(conn, u)
	} else {
		err = g.interactive(ctx, conn, u)
	}
	if err != nil && ctx.Err() == nil && !g.Stopping.Load() {
		g.Fail(i, u.kind+" user: "+err.Error())
	}
}

// Fail records that user i's stream broke, or never opened.
func (g *Group) Fail(i int, text string) {
	g.users[i].broken.Store(true)
	g.Failed.Add(1)
	g.errs.Add(text)
}

func (g *Group) bulk(conn net.Conn, u *user) error {
	if _, err := conn.Write([]byte{tcptarget.MixedBulk}); err != nil {
		return err
	}
	u.up.Add(1)
	buf := make([]byte, 32<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			u.gotFirstByte()
			u.down.Add(int64(n))
		}
		if err != nil {
			return err
		}
	}
}

func (g *Group) interactive(ctx context.Context, conn net.Conn, u *user) error {
	req := make([]byte, 1, 1+tcptarget.MixedHeaderLen+g.mix.RequestBytes)
	req[0] = tcptarget.MixedInteractive
	req = tcptarget.AppendMixedRequest(req, g.mix.ResponseBytes, g.mix.RequestBytes)
	req = req[:cap(req)]
	buf := make([]byte, 16<<10)
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
	for first := true; ; first = false {
		start := time.Now()
		out := req
		if !first {
			out = req[1:]
		}
		if _, err := conn.Write(out); err != nil {
			return err
		}
		u.up.Add(int64(len(out)))
		for left := g.mix.ResponseBytes; left > 0; {
			n, err := conn.Read(buf[:min(len(buf), left)])
			if n > 0 {
				u.gotFirstByte()
				u.down.Add(int64(n))
				left -= n
			}
			if err != nil {
				if err == io.EOF && left > 0 {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		u.requests.Add(1)
		if g.Measuring.Load() {
			g.Latency.Add(time.Since(start))
		}
		timer.Reset(g.mix.Think)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// Len returns the number of users.
func (g *Group) Len() int { return len(g.users) }

// Started counts the users that have received their first byte.
func (g *Group) Started() int {
	n := 0
	for _, u := range g.users {
		select {
		case <-u.first:
			n++
		default:
		}
	}
	return n
}

// settled counts the users that have received a byte or failed.
func (g *Group) settled() int {
	n := 0
	for _, u := range g.users {
		select {
		case <-u.first:
			n++
		default:
			if u.broken.Load() {
				n++
			}
		}
	}
	return n
}

// WaitStarted waits until every user has received a byte or failed, or
// until timeout or ctx ends; it returns how many had received one.
func (g *Group) WaitStarted(ctx context.Context, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if g.settled() == len(g.users) {
			break
		}
		sleep.For(ctx, 100*time.Millisecond)
	}
	return g.Started()
}

// Counts is a snapshot of every user's bytes (down + up) and responses.
type Counts struct {
	bytes, down, up []int64
	requests        []int64
}

// Snapshot returns every user's counts so far.
func (g *Group) Snapshot() Counts {
	c := Counts{
		bytes: make([]int64, len(g.users)), down: make([]int64, len(g.users)),
		up: make([]int64, len(g.users)), requests: make([]int64, len(g.users)),
	}
	for i, u := range g.users {
		c.down[i], c.up[i] = u.down.Load(), u.up.Load()
		c.bytes[i] = c.down[i] + c.up[i]
		c.requests[i] = u.requests.Load()
	}
	return c
}

// UserClass is what the users of one kind did over a measured window.
type UserClass struct {
	Kind  string `json:"kind"`
	Users int    `json:"users"`
	// MBPerSec: all of the class's users together, down and up.
	MBPerSec float64 `json:"mb_per_sec"`
	// Per user, KB/s (10^3 bytes) down and up: the slowest, the median
	// and the fastest.
	SlowestKBPerSec float64 `json:"slowest_kb_per_sec"`
	MedianKBPerSec  float64 `json:"median_kb_per_sec"`
	FastestKBPerSec float64 `json:"fastest_kb_per_sec"`
	// SlowestToMedian is the slowest user's rate over the median's: a
	// user starves below 0.25.
	SlowestToMedian float64 `json:"slowest_to_median"`
	// Responses counts interactive responses read in full in the window.
	Responses int64 `json:"responses,omitempty"`
}

// WindowCounts is what the users did between two snapshots.
type WindowCounts struct {
	Bytes, down, up int64 // all users
	Classes         []UserClass
}

// Window returns what the users did between snapshots a and b, elapsed
// apart.
func (g *Group) Window(a, b Counts, elapsed time.Duration) WindowCounts {
	var w WindowCounts
	for _, kind := range []string{UserBulk, UserInteractive} {
		c := UserClass{Kind: kind}
		var rates []float64
		var total int64
		for i, u := range g.users {
			if u.kind != kind {
				continue
			}
			n := b.bytes[i] - a.bytes[i]
			total += n
			rates = append(rates, float64(n)/1e3/elapsed.Seconds())
			c.Responses += b.requests[i] - a.requests[i]
		}
		if len(rates) == 0 {
			continue
		}
		c.Users = len(rates)
		c.MBPerSec = measure.Round3(float64(total) / 1e6 / elapsed.Seconds())
		c.SlowestKBPerSec, c.FastestKBPerSec = measure.Round3(slices.Min(rates)), measure.Round3(slices.Max(rates))
		c.MedianKBPerSec = measure.Round3(measure.MedianFloat(rates))
		if c.MedianKBPerSec > 0 {
			c.SlowestToMedian = measure.Round3(slices.Min(rates) / measure.MedianFloat(rates))
		}
		w.Classes = append(w.Classes, c)
	}
	for i := range g.users {
		w.down += b.down[i] - a.down[i]
		w.up += b.up[i] - a.up[i]
	}
	w.Bytes = w.down + w.up
	return w
}

// SlowestToMedian is the lowest SlowestToMedian of the classes (0 without
// Classes).
func SlowestToMedian(classes []UserClass) float64 {
	r := 0.0
	for i, c := range classes {
		if i == 0 || c.SlowestToMedian < r {
			r = c.SlowestToMedian
		}
	}
	return r
}
