package interop

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/netlab"
)

// pathChains are the chains the path lab compares: each implementation
// whole, Flurry's client with Snowflake's proxy and relay (what most of
// our users meet), and Snowflake's client with our proxy and relay.
var pathChains = []pathChain{
	{name: "snowflake", roles: Roles{Snowflake, Snowflake, Snowflake, Snowflake}},
	{name: "flurry", roles: Roles{}},
	{name: "fl-client+sf-proxy+sf-relay", roles: Roles{Broker: Snowflake, Proxy: Snowflake, Client: Flurry, Relay: Snowflake}},
	{name: "sf-client+fl-proxy+fl-relay", roles: Roles{Broker: Flurry, Proxy: Flurry, Client: Snowflake, Relay: Flurry}},
}

// pathChain is a chain of the path lab, named for its report.
type pathChain struct {
	name    string
	roles   Roles
	max     int  // the client's -max; 0 means 1
	standby bool // the client's -standby
}

// sharedChains also run, on a rate-limited path, beside a plain TCP
// download through the same bottleneck: is the chain fair to the path?
var sharedChains = map[string]bool{"snowflake": true, "flurry": true}

// sharedTime is how long the TCP download runs beside the chain's.
const sharedTime = 30 * time.Second

// pathProfiles are the paths between the client and the rest.
var pathProfiles = []string{"wifi", "delay=75ms,jitter=5ms", "intercontinental", "mobile"}

const (
	// pathFileSize is the most a download takes; pathTimeout the longest
	// it may run. A slow chain's figure is what it carried in that time.
	pathFileSize = 20 << 20
	pathTimeout  = 40 * time.Second
)

// pathResult is one download on one path.
type pathResult struct {
	Bytes      int64
	FirstByte  time.Duration
	MBps       float64       // after the first byte
	LongestGap time.Duration // without a byte, after the first
	CPUPerMB   map[string]float64
	// BoxDrops counts the box's own drops (its queue behind the rate),
	// LossDrops the profile's random losses.
	BoxDrops, LossDrops uint64
	// Shared is set when a TCP download ran beside the chain's for
	// sharedTime from the chain's first byte: SharedMBps is what the chain
	// carried meanwhile, TCPMBps what TCP did.
	Shared              bool
	SharedMBps, TCPMBps float64
	Err                 string
}

func (r pathResult) String() string {
	s := fmt.Sprintf("%6.2f MB/s, first byte %5.2fs, gap %5.2fs, box drops %d, lost %d", r.MBps,
		r.FirstByte.Seconds(), r.LongestGap.Seconds(), r.BoxDrops, r.LossDrops)
	if r.Shared {
		s += fmt.Sprintf(", beside TCP %.2f MB/s against TCP's %.2f", r.SharedMBps, r.TCPMBps)
	}
	if len(r.CPUPerMB) > 0 {
		s += fmt.Sprintf(", CPU ms/MB client %.0f proxy %.0f relay %.0f",
			r.CPUPerMB["client"], r.CPUPerMB["proxy"], r.CPUPerMB["relay"])
	}
	if r.Err != "" && r.Bytes < pathFileSize {
		s += " (" + r.Err + ")"
	}
	return s
}

// TestPathLab measures, side by side on each path profile, a plain TCP
// download through the lab's box and a download through each chain of
// pathChains, twice in alternation. It asserts only that each chain's
// bytes arrive intact; the figures are printed. It takes many minutes, so
// it runs only with FLURRY_PATHLAB=1 (`make pathlab`).
func TestPathLab(t *testing.T) {
	if os.Getenv("FLURRY_PATHLAB") != "1" {
		t.Skip("FLURRY_PATHLAB=1 runs the path lab (make pathlab)")
	}
	testenv.Root(t, "the path lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	profiles, chains, withTCP := pathLabSelection(t, pathChains)
	logs := os.Getenv("FLURRY_PATHLAB_LOGS")
	var report strings.Builder
	n := 0
	for _, profile := range profiles {
		path, err := netlab.ParseProfile(profile)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&report, "path %s (each direction)\n", profile)
		for round := range 2 {
			if withTCP {
				n++
				lab, err := netlab.New(context.Background(), netlab.Config{Name: labName("pl", n), Up: path, Down: path, Seed: uint64(n)})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*pathTimeout)
				before := lab.Stats()
				ref, err := netlab.TCPReference(ctx, lab, pathFileSize)
				cancel()
				if err != nil {
					t.Errorf("%s: TCP reference: %v", profile, err)
				}
				st := ref.Stats.Sub(before)
				line := fmt.Sprintf("  %d %-28s %6.2f MB/s, first byte %5.2fs, box drops %d, lost %d\n", round+1, "tcp", ref.MBps(),
					ref.TimeToFirstByte.Seconds(), st.Up.QueueDropped+st.Down.QueueDropped, st.Up.LossDropped+st.Down.LossDropped)
				report.WriteString(line)
				t.Logf("%s:%s", profile, line) // as it goes: the run takes many minutes
				lab.Close()
			}
			for _, c := range chains {
				for _, share := range []bool{false, true} {
					if share && (path.Rate == 0 || !sharedChains[c.name]) {
						continue
					}
					n++
					name := c.name
					if share {
						name += "+tcp"
					}
					dir := filepath.Join(t.TempDir(), "chain")
					if logs != "" {
						dir = filepath.Join(logs, fmt.Sprintf("%d-%s-%d-%s", n, profile, round+1, name))
					}
					r := runPathCell(t, n, path, c.roles, fl, sf, dir, share)
					line := fmt.Sprintf("  %d %-28s %s\n", round+1, name, r)
					report.WriteString(line)
					t.Logf("%s:%s", profile, line)
				}
			}
		}
	}
	t.Logf("path lab, %d MiB or %v per download (date %s):\n%s", pathFileSize>>20, pathTimeout,
		time.Now().UTC().Format(time.DateOnly), report.String())
}

// pathLabSelection returns the profiles and chains (of all) to run and
// whether to run the plain TCP download: all of them, or those
// FLURRY_PATHLAB_PROFILES (profiles separated by spaces) and
// FLURRY_PATHLAB_CHAINS (chain names, and tcp for the TCP download,
// separated by commas) name.
func pathLabSelection(t *testing.T, all []pathChain) (profiles []string, chains []pathChain, withTCP bool) {
	profiles, chains, withTCP = pathProfiles, all, true
	if v := os.Getenv("FLURRY_PATHLAB_PROFILES"); v != "" {
		profiles = strings.Fields(v)
	}
	if v := os.Getenv("FLURRY_PATHLAB_CHAINS"); v != "" {
		chains, withTCP = nil, false
		for name := range strings.SplitSeq(v, ",") {
			if name == "tcp" {
				withTCP = true
				continue
			}
			i := slices.IndexFunc(all, func(c pathChain) bool { return c.name == name })
			if i < 0 {
				t.Fatalf("FLURRY_PATHLAB_CHAINS: no chain %q", name)
			}
			chains = append(chains, all[i])
		}
	}
	return profiles, chains, withTCP
}

// runPathCell downloads through one chain across a lab on path.
// With share, a plain TCP download runs beside it for sharedTime from its
// first byte.
func runPathCell(t *testing.T, n int, path netlab.Profile, roles Roles, fl demo.Binaries, sf SnowflakeBinaries, dir string, share bool) pathResult {
	var r pathResult
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	lab, err := netlab.New(ctx, netlab.Config{Name: labName("pl", n), Up: path, Down: path, Seed: uint64(n)})
	if err != nil {
		t.Fatal(err)
	}
	defer lab.Close()
	var stunURL string
	if err := lab.Do(netlab.Outside, func() error {
		stunURL = stuntest.StartOn(t, lab.OutsideAddr(labSTUNAddr))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	c, err := StartChain(ctx, ChainConfig{Roles: roles, Flurry: fl, Snowflake: sf, FileSize: pathFileSize,
		STUN: stunURL, Lab: lab, Dir: dir})
	if err != nil {
		t.Errorf("%s: %v", roles, err)
		r.Err = err.Error()
		return r
	}
	defer c.Close()

	cpuBefore := cpuTimes(t, c)
	boxBefore := lab.Stats()
	var progress demo.Progress
	var gaps gapWatch
	stop := make(chan struct{})
	go gaps.watch(&progress, stop)
	dctx, dcancel := context.WithTimeout(ctx, pathTimeout)
	var shared sync.WaitGroup
	if share {
		r.Shared = true
		shared.Go(func() { r.SharedMBps, r.TCPMBps = shareWithTCP(dctx, lab, &progress) })
	}
	var fr demo.FetchResult
	err = c.InClient(func() error {
		var err error
		fr, err = demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, &progress)
		return err
	})
	dcancel()
	shared.Wait()
	close(stop)
	if err != nil {
		if errors.Is(err, demo.ErrChecksum) || !errors.Is(dctx.Err(), context.DeadlineExceeded) {
			t.Errorf("%s: download: %v", roles, err)
		}
		r.Err = err.Error()
	}
	r.Bytes = progress.Bytes()
	r.FirstByte = fr.FirstByte
	if d := fr.Total - fr.FirstByte; d > 0 && fr.FirstByte > 0 {
		r.MBps = float64(r.Bytes) / 1e6 / d.Seconds()
	}
	r.LongestGap = gaps.longest(time.Time{}).length
	st := lab.Stats().Sub(boxBefore)
	r.BoxDrops = st.Up.QueueDropped + st.Down.QueueDropped
	r.LossDrops = st.Up.LossDropped + st.Down.LossDropped
	if r.Bytes > 0 {
		r.CPUPerMB = map[string]float64{}
		for role, cpu := range cpuTimes(t, c) {
			r.CPUPerMB[role] = float64((cpu - cpuBefore[role]).Milliseconds()) / (float64(r.Bytes) / 1e6)
		}
	}
	return r
}

// shareWithTCP waits for the chain's first byte, then runs a plain TCP
// download through the lab for sharedTime (or until ctx ends) and returns
// what the chain and the TCP download carried meanwhile, in MB/s.
func shareWithTCP(ctx context.Context, lab *netlab.Lab, progress *demo.Progress) (chainMBps, tcpMBps float64) {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for progress.Bytes() == 0 {
		select {
		case <-ctx.Done():
			return 0, 0
		case <-tick.C:
		}
	}
	start, before := time.Now(), progress.Bytes()
	tctx, cancel := context.WithTimeout(ctx, sharedTime)
	defer cancel()
	res, _ := netlab.TCPReference(tctx, lab, 1<<30) // ends at sharedTime
	chainMBps = float64(progress.Bytes()-before) / 1e6 / time.Since(start).Seconds()
	return chainMBps, res.MBps()
}

// gapWatch samples a download's progress every 50 ms and keeps its gaps:
// each time without a new byte after the first, as long as the last
// sample that saw none says.
type gapWatch struct {
	mu      sync.Mutex
	gaps    []byteGap // ended
	current byteGap   // the gap going on, if any (length > 0)
}

// byteGap is one gap: it began at start (the sample with the last new
// bytes), lasted length and ended at resumed (the sample with new bytes;
// zero if the download ended or was cut first).
type byteGap struct {
	start, resumed time.Time
	length         time.Duration
}

// watch samples progress until stop.
func (g *gapWatch) watch(progress *demo.Progress, stop <-chan struct{}) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last int64
	var since time.Time
	for {
		select {
		case <-stop:
			g.mu.Lock()
			if g.current.length > 0 {
				g.gaps = append(g.gaps, g.current)
				g.current = byteGap{}
			}
			g.mu.Unlock()
			return
		case now := <-tick.C:
			b := progress.Bytes()
			g.mu.Lock()
			switch {
			case b == 0:
			case b != last:
				if g.current.length > 0 {
					g.current.resumed = now
					g.gaps = append(g.gaps, g.current)
				}
				g.current = byteGap{}
				last, since = b, now
			case !since.IsZero():
				g.current = byteGap{start: since, length: now.Sub(since)}
			}
			g.mu.Unlock()
		}
	}
}

// longest returns the longest gap that began before before (any, if
// before is zero).
func (g *gapWatch) longest(before time.Time) byteGap {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out byteGap
	for _, gap := range append(g.gaps, g.current) {
		if gap.length > out.length && (before.IsZero() || gap.start.Before(before)) {
			out = gap
		}
	}
	return out
}
