package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

// labSwitchCensor blocks the first proxy of TestCensorLabSwitch and lets
// the second through: it drops a flow whose DTLS hello is pion's own
// (the first proxy's covert DTLS is disabled) 300 ms after the hello.
const labSwitchCensor = "dtls-ja4-block"

// labSwitchTimeout bounds TestCensorLabSwitch's download, from its start:
// past it the client has not moved off the blocked proxy in time.
const labSwitchTimeout = 90 * time.Second

// labSwitchTick is how often TestCensorLabSwitch reads the censor's drops
// and the download's bytes: the resolution of its figures.
const labSwitchTick = 10 * time.Millisecond

// labSwitchStall is the shortest pause in the download, after the first
// drop, that TestCensorLabSwitch takes for the client's stall on the
// blocked proxy (what the proxy had in flight arrives within
// milliseconds of the drop), and labSwitchRecovered how much more must
// arrive after it for the download to count as recovered.
const (
	labSwitchStall     = 500 * time.Millisecond
	labSwitchRecovered = 1 << 20
)

// labSwitchResult is one client's run of TestCensorLabSwitch. The times
// after FirstDrop count from the censor's first drop; zero means it never
// happened.
type labSwitchResult struct {
	Client    string
	Completed bool
	Error     string `json:",omitempty"`
	// FirstDrop is when the censor first dropped a packet of the first
	// proxy's flow, from the download's start; BytesAtDrop how much of
	// the download had arrived by then.
	FirstDrop   time.Duration
	BytesAtDrop int64
	// Resumed is when the download's first byte after its stall came
	// (the stall being its first pause of labSwitchStall or more), with
	// BytesAtStall received before; Recovered when labSwitchRecovered
	// more had come. Total is the download's whole time, from its start.
	Resumed, Recovered, Total time.Duration
	BytesAtStall              int64
	// CensorDrops is how many packets the censor dropped in all.
	CensorDrops uint64
}

// TestCensorLabSwitch measures how long a client takes to notice that the
// censor blocks its proxy and to move to another. Each client (Snowflake's
// and Flurry's, each with its own implementation's broker and relay at
// their defaults) starts with one Flurry proxy whose DTLS hello the
// censor blocks (labSwitchCensor: covert DTLS disabled); the download
// starts, and at the censor's first drop on that proxy's flow a second
// proxy that gets through (mimic) starts. The figures are the times from
// that drop until the download makes progress again after its stall, and
// until 1 MiB more has come (labSwitchRecovered); the download must
// also complete, intact, within labSwitchTimeout. Only Flurry's client is
// held to it: Snowflake's result is reported, whatever it is.
func TestCensorLabSwitch(t *testing.T) {
	if testing.Short() {
		t.Skip("the censor lab takes minutes")
	}
	testenv.Root(t, "the censor lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	clients := []struct {
		name  string
		roles Roles
	}{
		{"snowflake", Roles{Broker: Snowflake, Proxy: Flurry, Client: Snowflake, Relay: Snowflake}},
		{"flurry", Roles{}},
	}
	var (
		mu      sync.Mutex
		results = make([]labSwitchResult, len(clients))
	)
	t.Run("clients", func(t *testing.T) {
		for i, c := range clients {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				r := runLabSwitch(t, i, c.roles, fl, sf)
				r.Client = c.name
				t.Logf("%s", formatLabSwitch(r))
				if c.roles.Client == Flurry && !r.Completed {
					t.Errorf("Flurry's client did not move off the blocked proxy: %s", r.Error)
				}
				mu.Lock()
				results[i] = r
				mu.Unlock()
			})
		}
	})
	var b strings.Builder
	for _, r := range results {
		fmt.Fprintf(&b, "%s\n", formatLabSwitch(r))
	}
	t.Logf("censor lab, %s: moving off a proxy that %s blocks (%d MiB, the %s profile, within %v):\n%s",
		time.Now().UTC().Format(time.DateOnly), labSwitchCensor, labFileSize>>20, labProfile, labSwitchTimeout, b.String())
}

// formatLabSwitch prints r on one line.
func formatLabSwitch(r labSwitchResult) string {
	ms := func(d time.Duration) string {
		if d == 0 {
			return "never"
		}
		return d.Round(10 * time.Millisecond).String()
	}
	if r.FirstDrop == 0 {
		return fmt.Sprintf("%s client: no drop by the censor; completed %v %s", r.Client, r.Completed, r.Error)
	}
	out := fmt.Sprintf("%s client: first drop %s into the download (%d KiB in); after it: download resumed %s (%d KiB in), 1 MiB more %s, ",
		r.Client, ms(r.FirstDrop), r.BytesAtDrop>>10, ms(r.Resumed), r.BytesAtStall>>10, ms(r.Recovered))
	if r.Completed {
		return out + fmt.Sprintf("complete and intact %s after the download's start", ms(r.Total))
	}
	return out + "not complete: " + r.Error
}

// runLabSwitch runs one client through TestCensorLabSwitch.
func runLabSwitch(t *testing.T, i int, roles Roles, fl demo.Binaries, sf SnowflakeBinaries) labSwitchResult {
	var res labSwitchResult
	fail := func(err error) labSwitchResult {
		res.Error = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path, err := netlab.ParseProfile(labProfile)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := netlab.New(ctx, netlab.Config{Name: labName("sw", i), Up: path, Down: path, Seed: uint64(i + 1)})
	if err != nil {
		t.Errorf("lab: %v", err)
		return fail(err)
	}
	defer lab.Close()
	prog, err := censor.Parse(labSwitchCensor, labOptions(lab, nil))
	if err != nil {
		t.Fatal(err)
	}
	lab.SetCensor(prog)
	var stunURL string
	if err := lab.Do(netlab.Outside, func() error {
		stunURL = stuntest.StartOn(t, lab.OutsideAddr(labSTUNAddr))
		return nil
	}); err != nil {
		return fail(err)
	}
	c, err := StartChain(ctx, ChainConfig{Roles: roles, Flurry: fl, Snowflake: sf, FileSize: labFileSize,
		STUN: stunURL, Lab: lab, Dir: filepath.Join(t.TempDir(), "chain"),
		ProxyCovert: []string{"disable", "mimic"}})
	if err != nil {
		t.Errorf("chain: %v", err)
		return fail(err)
	}
	defer c.Close()

	type fetched struct {
		fr  demo.FetchResult
		err error
	}
	progress := new(demo.Progress)
	dctx, dcancel := context.WithTimeout(ctx, labSwitchTimeout)
	defer dcancel()
	start := time.Now()
	done := make(chan fetched, 1)
	go func() {
		var f fetched
		f.err = c.InClient(func() error {
			var err error
			f.fr, err = demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, progress)
			return err
		})
		done <- f
	}()
	// The second proxy starts at the first drop; Close must wait for it.
	second := make(chan error, 1)
	var secondStarted bool
	defer func() {
		if secondStarted {
			<-second
		}
	}()
	tick := time.NewTicker(labSwitchTick)
	defer tick.Stop()
	var (
		firstDrop  time.Time
		lastBytes  int64     // the download's bytes at lastChange
		lastChange time.Time // when they last grew
	)
	for {
		select {
		case f := <-done:
			if secondStarted { // it changes c's proxies
				<-second
				secondStarted = false
			}
			st := lab.Stats()
			res.CensorDrops = st.Up.CensorDropped + st.Down.CensorDropped
			res.Total = time.Since(start)
			if f.err != nil {
				if errors.Is(f.err, demo.ErrChecksum) {
					t.Errorf("corrupted download: %v", f.err)
				}
				if os.Getenv("FLURRY_CENSORLAB_LOGS") != "" {
					t.Logf("logs:\n%s", c.LogTails(40))
				}
				return fail(f.err)
			}
			res.Completed = true
			return res
		case err := <-second:
			secondStarted = false
			if err != nil {
				t.Logf("second proxy: %v", err)
			}
		case now := <-tick.C:
			bytes := progress.Bytes()
			if firstDrop.IsZero() {
				st := lab.Stats()
				if st.Up.CensorDropped+st.Down.CensorDropped == 0 {
					continue
				}
				firstDrop, lastChange, lastBytes = now, now, bytes
				res.FirstDrop = now.Sub(start)
				res.BytesAtDrop = bytes
				secondStarted = true
				go func() {
					_, err := c.StartProxy(ctx)
					second <- err
				}()
				continue
			}
			if bytes == lastBytes {
				continue
			}
			if res.Resumed == 0 && now.Sub(lastChange) >= labSwitchStall {
				// The first bytes after the stall: the client is on
				// another proxy (or back on its first one).
				res.Resumed = now.Sub(firstDrop)
				res.BytesAtStall = lastBytes
			}
			if res.Resumed != 0 && res.Recovered == 0 && bytes >= res.BytesAtStall+labSwitchRecovered {
				res.Recovered = now.Sub(firstDrop)
			}
			lastBytes, lastChange = bytes, now
		}
	}
}
