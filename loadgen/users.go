package loadgen

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
// RunProxyUsers) do, each on one stream to a TargetMixed target: a share
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

func (m UserMix) withDefaults() (UserMix, error) {
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
		return m, fmt.Errorf("%w: bulk share above 1", ErrInvalidConfig)
	case m.RequestBytes < 0 || m.RequestBytes > maxMixedRequest:
		return m, fmt.Errorf("%w: request bytes out of range 0..%d", ErrInvalidConfig, maxMixedRequest)
	case m.ResponseBytes < 1 || m.ResponseBytes > maxMixedResponse:
		return m, fmt.Errorf("%w: response bytes out of range 1..%d", ErrInvalidConfig, maxMixedResponse)
	case m.Think < 0:
		return m, fmt.Errorf("%w: negative think time", ErrInvalidConfig)
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

// userGroup is the users of one run, with the latencies of interactive
// requests recorded while measuring is set.
type userGroup struct {
	mix       UserMix
	users     []*user
	latency   *recorder
	measuring atomic.Bool
	errs      *errorSamples
	failed    atomic.Int64 // users whose stream broke before the run ended
	stopping  atomic.Bool
}

func newUserGroup(mix UserMix, n int, errs *errorSamples) *userGroup {
	g := &userGroup{mix: mix, latency: newRecorder(), errs: errs, users: make([]*user, n)}
	for i := range g.users {
		g.users[i] = newUser(mix.kind(i))
	}
	return g
}

// run is user i's traffic on conn until ctx ends or conn breaks; it closes
// conn.
func (g *userGroup) run(ctx context.Context, i int, conn net.Conn) {
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
	if err != nil && ctx.Err() == nil && !g.stopping.Load() {
		g.fail(i, u.kind+" user: "+err.Error())
	}
}

// fail records that user i's stream broke, or never opened.
func (g *userGroup) fail(i int, text string) {
	g.users[i].broken.Store(true)
	g.failed.Add(1)
	g.errs.add(text)
}

func (g *userGroup) bulk(conn net.Conn, u *user) error {
	if _, err := conn.Write([]byte{mixedBulk}); err != nil {
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

func (g *userGroup) interactive(ctx context.Context, conn net.Conn, u *user) error {
	req := make([]byte, 1, 1+mixedHeaderLen+g.mix.RequestBytes)
	req[0] = mixedInteractive
	req = appendMixedRequest(req, g.mix.ResponseBytes, g.mix.RequestBytes)
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
		if g.measuring.Load() {
			g.latency.add(time.Since(start))
		}
		timer.Reset(g.mix.Think)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// started counts the users that have received their first byte.
func (g *userGroup) started() int {
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
func (g *userGroup) settled() int {
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

// waitStarted waits until every user has received a byte or failed, or
// until timeout or ctx ends; it returns how many had received one.
func (g *userGroup) waitStarted(ctx context.Context, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		if g.settled() == len(g.users) {
			break
		}
		sleep.For(ctx, 100*time.Millisecond)
	}
	return g.started()
}

// userCounts is a snapshot of every user's bytes (down + up) and
// responses.
type userCounts struct {
	bytes, down, up []int64
	requests        []int64
}

func (g *userGroup) snapshot() userCounts {
	c := userCounts{
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

// userWindow is what the users did between two snapshots.
type userWindow struct {
	bytes, down, up int64 // all users
	classes         []UserClass
}

func (g *userGroup) window(a, b userCounts, elapsed time.Duration) userWindow {
	var w userWindow
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
		c.MBPerSec = round3(float64(total) / 1e6 / elapsed.Seconds())
		c.SlowestKBPerSec, c.FastestKBPerSec = round3(slices.Min(rates)), round3(slices.Max(rates))
		c.MedianKBPerSec = round3(medianFloat(rates))
		if c.MedianKBPerSec > 0 {
			c.SlowestToMedian = round3(slices.Min(rates) / medianFloat(rates))
		}
		w.classes = append(w.classes, c)
	}
	for i := range g.users {
		w.down += b.down[i] - a.down[i]
		w.up += b.up[i] - a.up[i]
	}
	w.bytes = w.down + w.up
	return w
}

// slowestToMedian is the lowest SlowestToMedian of the classes (0 without
// classes).
func slowestToMedian(classes []UserClass) float64 {
	r := 0.0
	for i, c := range classes {
		if i == 0 || c.SlowestToMedian < r {
			r = c.SlowestToMedian
		}
	}
	return r
}

func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
