package chainload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/socks5"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/manyusers"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// DefaultProxyUsers are the user counts of a many-user proxy run.
var DefaultProxyUsers = []int{1, 10, 50}

// DefaultProxyUsersStartTimeout bounds the wait for every user's first
// byte: a proxy takes one client per poll (2 s at least for Snowflake's),
// and a client that found no proxy retries later (fifty users took
// Snowflake's chain about eight minutes).
const DefaultProxyUsersStartTimeout = 15 * time.Minute

// ProxyUsersConfig configures RunProxyUsers: the whole chain of each
// implementation, with many users through its one proxy.
type ProxyUsersConfig struct {
	// Implementations are measured in turn, each with its own chain
	// (target, server, broker, one proxy, one client), started afresh for
	// every run. At least one.
	Implementations []chainproc.Implementation
	// Users are the numbers of concurrent users, each a SOCKS connection
	// to the client and so a session of its own, with its own rendezvous,
	// all served by the one proxy. Default DefaultProxyUsers.
	Users []int
	// Rounds, Mix, Duration and WarmUp: see RelayUsersConfig.
	Rounds           int
	Mix              manyusers.UserMix
	Duration, WarmUp time.Duration
	// StartTimeout bounds the wait for every user's first byte. Default
	// DefaultProxyUsersStartTimeout.
	StartTimeout time.Duration
	// PollInterval is the proxy's -poll-interval. Default
	// DefaultSideBySidePoll.
	PollInterval time.Duration
	// Dir receives each run's logs and state. Required.
	Dir string
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// ProxyUsersRun is one chain with one number of users.
type ProxyUsersRun struct {
	Implementation string  `json:"implementation"`
	Users          int     `json:"users"` // asked for
	Round          int     `json:"round"`
	Started        int     `json:"started"` // users with a first byte before the window
	StartSeconds   float64 `json:"start_seconds"`
	FailedUsers    int64   `json:"failed_users"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	MB             float64 `json:"mb"`
	MBPerSec       float64 `json:"mb_per_sec"`
	// CPUMsPerMB per role over the window.
	CPUMsPerMB map[string]float64 `json:"cpu_ms_per_mb"`
	// ProxyRSS is the proxy's median RSS over the window (its steady
	// state), PeakRSS each role's VmHWM at the window's end (the proxy's
	// includes every user's arrival).
	ProxyRSS int64            `json:"proxy_rss_bytes"`
	PeakRSS  map[string]int64 `json:"peak_rss_bytes"`
	// UDPSocketMemory is the UDP socket memory of the machine (every
	// WebRTC socket: proxy and client) in the middle of the window, less
	// before the chain started.
	UDPSocketMemory int64                 `json:"udp_socket_memory_bytes"`
	RcvbufErrors    int64                 `json:"rcvbuf_errors"`
	Classes         []manyusers.UserClass `json:"classes"`
	SlowestToMedian float64               `json:"slowest_to_median"`
	Latency         measure.Percentiles   `json:"latency"`
	ErrorSamples    []string              `json:"error_samples,omitempty"`
}

// ProxyUsersSummary is one implementation at one count over its rounds:
// medians, except SlowestToMedian (the lowest), PeakRSS (the highest) and
// FailedUsers (the sum).
type ProxyUsersSummary struct {
	Implementation  string  `json:"implementation"`
	Users           int     `json:"users"`
	Runs            int     `json:"runs"`
	MBPerSec        float64 `json:"mb_per_sec"`
	ProxyCPUMsPerMB float64 `json:"proxy_cpu_ms_per_mb"`
	ProxyRSS        int64   `json:"proxy_rss_bytes"`
	ProxyPeakRSS    int64   `json:"proxy_peak_rss_bytes"`
	ClientPeakRSS   int64   `json:"client_peak_rss_bytes"`
	UDPSocketMemory int64   `json:"udp_socket_memory_bytes"`
	SlowestToMedian float64 `json:"slowest_to_median"`
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	FailedUsers     int64   `json:"failed_users"`
	Started         int     `json:"started"` // lowest over the runs
}

// ProxyUsersResult is what RunProxyUsers measured.
type ProxyUsersResult struct {
	Mix             manyusers.UserMix   `json:"mix"`
	DurationSeconds float64             `json:"duration_seconds"`
	Runs            []ProxyUsersRun     `json:"runs"`
	Summaries       []ProxyUsersSummary `json:"summaries"`
}

func (cfg ProxyUsersConfig) withDefaults() (ProxyUsersConfig, error) {
	if len(cfg.Implementations) == 0 {
		return cfg, fmt.Errorf("%w: no implementation", measure.ErrInvalidConfig)
	}
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: no work directory", measure.ErrInvalidConfig)
	}
	if err := chainproc.DistinctNames(cfg.Implementations); err != nil {
		return cfg, err
	}
	cfg.Users = slices.Clone(cfg.Users)
	if len(cfg.Users) == 0 {
		cfg.Users = slices.Clone(DefaultProxyUsers)
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = manyusers.DefaultUsersRounds
	}
	if cfg.Duration == 0 {
		cfg.Duration = manyusers.DefaultUsersDuration
	}
	if cfg.WarmUp == 0 {
		cfg.WarmUp = manyusers.DefaultUsersWarmUp
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultProxyUsersStartTimeout
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultSideBySidePoll
	}
	var err error
	if cfg.Mix, err = cfg.Mix.WithDefaults(); err != nil {
		return cfg, err
	}
	switch {
	case slices.Min(cfg.Users) < 1 || slices.Max(cfg.Users) > 1000:
		return cfg, fmt.Errorf("%w: users out of range 1..1000", measure.ErrInvalidConfig)
	case cfg.Rounds < 1 || cfg.Rounds > 100:
		return cfg, fmt.Errorf("%w: rounds out of range 1..100", measure.ErrInvalidConfig)
	case cfg.Duration < 0 || cfg.WarmUp < 0 || cfg.StartTimeout < 0 || cfg.PollInterval < 0:
		return cfg, fmt.Errorf("%w: negative duration", measure.ErrInvalidConfig)
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	return cfg, nil
}

// RunProxyUsers measures each implementation's proxy serving many users:
// for every count and round, each implementation in turn (the order
// alternating) starts its whole chain afresh (as RunSideBySide, with a
// TargetMixed target), opens that many SOCKS connections to its client
// at once, each a user doing what the mix says, and once every user has
// received a byte and the warm-up has passed measures the proxy's memory
// and every role's CPU over the window. It must run in a network
// namespace whose only interface is loopback.
func RunProxyUsers(ctx context.Context, cfg ProxyUsersConfig) (ProxyUsersResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return ProxyUsersResult{}, err
	}
	if ok, err := onlyLoopback(); err != nil || !ok {
		return ProxyUsersResult{}, errors.Join(errNotIsolated, err)
	}
	res := ProxyUsersResult{Mix: cfg.Mix, DurationSeconds: measure.Seconds(cfg.Duration)}
	if _, err := measure.RaiseFileLimit(4*uint64(slices.Max(cfg.Users)) + 512); err != nil {
		return res, err
	}
	for _, n := range cfg.Users {
		for round := range cfg.Rounds {
			for _, im := range chainproc.Alternate(cfg.Implementations, round) {
				dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-%d-%d", im.Name, n, round+1))
				run, err := runProxyUsersOnce(ctx, cfg, im, n, dir)
				run.Round = round + 1
				res.Runs = append(res.Runs, run)
				measure.Say(cfg.Progress, "%s, %d users, round %d: %d started in %.0f s, %.1f MB/s, proxy %.2f ms CPU/MB, RSS %s (peak %s), slowest/median %.2f, %d failed",
					im.Name, n, round+1, run.Started, run.StartSeconds, run.MBPerSec, run.CPUMsPerMB[chainproc.RoleProxy],
					measure.MiB(run.ProxyRSS), measure.MiB(run.PeakRSS[chainproc.RoleProxy]), run.SlowestToMedian, run.FailedUsers)
				if err != nil {
					return res, fmt.Errorf("%s, %d users: %w", im.Name, n, err)
				}
			}
		}
	}
	for _, n := range cfg.Users {
		for _, im := range cfg.Implementations {
			res.Summaries = append(res.Summaries, summarizeProxyUsers(res.Runs, im.Name, n))
		}
	}
	return res, nil
}

// runProxyUsersOnce starts im's chain, runs n users through its proxy
// and stops it.
func runProxyUsersOnce(ctx context.Context, cfg ProxyUsersConfig, im chainproc.Implementation, n int, dir string) (ProxyUsersRun, error) {
	run := ProxyUsersRun{Implementation: im.Name, Users: n, CPUMsPerMB: map[string]float64{}, PeakRSS: map[string]int64{}}
	udp0, _ := procstat.SocketMemory("UDP")
	chain, err := chainproc.StartChain(ctx, chainproc.ChainOptions{Dir: dir, PollInterval: cfg.PollInterval, TargetMode: tcptarget.Mixed}, im)
	if chain != nil {
		defer chain.Stop()
	}
	if err != nil {
		return run, err
	}
	var (
		errs    measure.ErrorSamples
		users   = manyusers.NewGroup(cfg.Mix, n, &errs)
		workers sync.WaitGroup
	)
	userCtx, stopUsers := context.WithCancel(ctx)
	defer func() {
		users.Stopping.Store(true)
		stopUsers()
		workers.Wait()
	}()
	measure.Say(cfg.Progress, "%s: %d users connecting", im.Name, n)
	start := time.Now()
	connectUsers(userCtx, cfg.StartTimeout, chain, users, &workers)
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		return fmt.Sprintf("%s: %d of %d users started after %.0f s", im.Name, users.Started(), n, time.Since(start).Seconds())
	})
	run.Started = users.WaitStarted(ctx, cfg.StartTimeout)
	prog.Stop()
	run.StartSeconds = measure.Seconds(time.Since(start))
	if run.Started == 0 {
		run.ErrorSamples = errs.Get()
		return run, fmt.Errorf("%w: no user received a byte (%v)", measure.ErrNoProgress, run.ErrorSamples)
	}
	sleep.For(ctx, cfg.WarmUp)
	w := measureProxyWindow(ctx, cfg, fmt.Sprintf("%s, %d users", im.Name, n), chain, users, udp0)
	w.fill(&run, chain, users)
	run.ErrorSamples = errs.Get()
	return run, ctx.Err()
}

// connectUsers connects every user of users through the chain's client to
// its target, each within timeout, and runs it under userCtx.
func connectUsers(userCtx context.Context, timeout time.Duration, chain *chainproc.Chain, users *manyusers.Group, workers *sync.WaitGroup) {
	dialer := &socks5.Dialer{Proxy: chain.SOCKSAddr, Dialer: measure.NewDialer(false)}
	for i := range users.Len() {
		workers.Go(func() {
			dctx, cancel := context.WithTimeout(userCtx, timeout)
			conn, err := dialer.DialContext(dctx, "tcp", chain.Target.Addr())
			cancel()
			if err != nil {
				if userCtx.Err() == nil {
					users.Fail(i, "socks: "+err.Error())
				}
				return
			}
			users.Run(userCtx, i, conn)
		})
	}
}

// proxyWindow is what the measured window of a proxy-users run saw.
type proxyWindow struct {
	elapsed        time.Duration
	cpu0, cpu1     map[string]time.Duration // by role
	drops0, drops1 int64                    // UDP receive-buffer drops
	rss            []int64                  // the proxy's
	udpMemory      int64                    // growth of UDP socket memory, taken mid-window
	users          manyusers.WindowCounts
}

// measureProxyWindow measures cfg.Duration of the running users; name
// labels its progress lines.
func measureProxyWindow(ctx context.Context, cfg ProxyUsersConfig, name string, chain *chainproc.Chain, users *manyusers.Group, udp0 int64) proxyWindow {
	var w proxyWindow
	proxy := procstat.Watcher{PID: chain.Procs[chainproc.RoleProxy].PID()}
	users.Measuring.Store(true)
	a := users.Snapshot()
	w.cpu0 = chain.CPUTimes()
	w.drops0, _ = procstat.UDPCounter("RcvbufErrors")
	begin := time.Now()
	udpTaken := false
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		return fmt.Sprintf("%s: %.0fs/%v measured", name, time.Since(begin).Seconds(), cfg.Duration)
	})
	for time.Since(begin) < cfg.Duration && ctx.Err() == nil {
		sleep.For(ctx, min(500*time.Millisecond, cfg.Duration-time.Since(begin)))
		if s, ok, _ := proxy.Sample(); ok {
			w.rss = append(w.rss, s.RSS)
		}
		if !udpTaken && time.Since(begin) >= cfg.Duration/2 {
			if m, err := procstat.SocketMemory("UDP"); err == nil {
				w.udpMemory = m - udp0
			}
			udpTaken = true
		}
	}
	prog.Stop()
	w.cpu1 = chain.CPUTimes()
	w.drops1, _ = procstat.UDPCounter("RcvbufErrors")
	b := users.Snapshot()
	w.elapsed = time.Since(begin)
	users.Measuring.Store(false)
	w.users = users.Window(a, b, w.elapsed)
	return w
}

// fill computes run's figures from the window and the chain's peak RSS.
func (w proxyWindow) fill(run *ProxyUsersRun, chain *chainproc.Chain, users *manyusers.Group) {
	run.UDPSocketMemory = w.udpMemory
	run.ElapsedSeconds = measure.Seconds(w.elapsed)
	run.MB = measure.Round3(float64(w.users.Bytes) / 1e6)
	run.MBPerSec = measure.Round3(run.MB / w.elapsed.Seconds())
	if run.MB > 0 {
		for role, t := range w.cpu1 {
			run.CPUMsPerMB[role] = measure.Round3(float64(t-w.cpu0[role]) / 1e6 / run.MB)
		}
	}
	for role, p := range chain.Procs {
		if s, err := procstat.ReadProc(p.PID()); err == nil {
			run.PeakRSS[role] = s.HWM
		}
	}
	run.ProxyRSS = measure.Median(w.rss)
	run.RcvbufErrors = w.drops1 - w.drops0
	run.Classes = w.users.Classes
	run.SlowestToMedian = manyusers.SlowestToMedian(w.users.Classes)
	run.Latency = users.Latency.Percentiles()
	run.FailedUsers = users.Failed.Load()
}

func summarizeProxyUsers(runs []ProxyUsersRun, name string, n int) ProxyUsersSummary {
	s := ProxyUsersSummary{Implementation: name, Users: n}
	var rate, cpu, p50, p99 []float64
	var rss, udp, client []int64
	for _, r := range runs {
		if r.Implementation != name || r.Users != n || r.MB == 0 {
			continue
		}
		if s.Runs == 0 || r.SlowestToMedian < s.SlowestToMedian {
			s.SlowestToMedian = r.SlowestToMedian
		}
		if s.Runs == 0 || r.Started < s.Started {
			s.Started = r.Started
		}
		s.Runs++
		rate, cpu = append(rate, r.MBPerSec), append(cpu, r.CPUMsPerMB[chainproc.RoleProxy])
		p50, p99 = append(p50, r.Latency.P50Ms), append(p99, r.Latency.P99Ms)
		rss, udp = append(rss, r.ProxyRSS), append(udp, r.UDPSocketMemory)
		s.ProxyPeakRSS = max(s.ProxyPeakRSS, r.PeakRSS[chainproc.RoleProxy])
		client = append(client, r.PeakRSS[chainproc.RoleClient])
		s.FailedUsers += r.FailedUsers
	}
	s.MBPerSec, s.ProxyCPUMsPerMB = measure.MedianFloat(rate), measure.MedianFloat(cpu)
	s.LatencyP50Ms, s.LatencyP99Ms = measure.MedianFloat(p50), measure.MedianFloat(p99)
	s.ProxyRSS, s.UDPSocketMemory, s.ClientPeakRSS = measure.Median(rss), measure.Median(udp), measure.Median(client)
	return s
}

// WriteProxyUsersTable prints one block per count, one row per
// implementation, with ratios to the first implementation.
func WriteProxyUsersTable(w io.Writer, r ProxyUsersResult) error {
	if len(r.Summaries) == 0 {
		_, err := fmt.Fprintln(w, "no results")
		return err
	}
	m := r.Mix
	fmt.Fprintf(w, "one proxy, many users: %.0f%% bulk, interactive %d B request / %d B response / %v think; %.0f s windows (medians over rounds, peak the highest; ratio to %s)\n",
		m.BulkShare*100, m.RequestBytes, m.ResponseBytes, m.Think, r.DurationSeconds, r.Summaries[0].Implementation)
	fmt.Fprintf(w, "%-6s %-16s %5s %8s %18s %18s %18s %12s %12s %9s %13s %7s\n",
		"users", "chain", "runs", "MB/s", "proxy CPU ms/MB", "proxy RSS MiB", "proxy peak MiB", "UDP sock MiB", "client peak", "slow/med", "p50/p99 ms", "failed")
	var base ProxyUsersSummary
	for _, s := range r.Summaries {
		ratio := func(v, b float64) string {
			if s.Implementation == base.Implementation || b == 0 {
				return ""
			}
			return fmt.Sprintf(" (%.2fx)", v/b)
		}
		if s.Implementation == r.Summaries[0].Implementation {
			base = s
		}
		fmt.Fprintf(w, "%-6d %-16s %5d %8.1f %18s %18s %18s %12.1f %12.1f %9.2f %13s %7d\n",
			s.Users, s.Implementation, s.Runs, s.MBPerSec,
			fmt.Sprintf("%.2f%s", s.ProxyCPUMsPerMB, ratio(s.ProxyCPUMsPerMB, base.ProxyCPUMsPerMB)),
			fmt.Sprintf("%.1f%s", float64(s.ProxyRSS)/(1<<20), ratio(float64(s.ProxyRSS), float64(base.ProxyRSS))),
			fmt.Sprintf("%.1f%s", float64(s.ProxyPeakRSS)/(1<<20), ratio(float64(s.ProxyPeakRSS), float64(base.ProxyPeakRSS))),
			float64(s.UDPSocketMemory)/(1<<20), float64(s.ClientPeakRSS)/(1<<20), s.SlowestToMedian,
			fmt.Sprintf("%.0f/%.0f", s.LatencyP50Ms, s.LatencyP99Ms), s.FailedUsers)
	}
	return nil
}
