package relayload

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xtaci/kcp-go/v5"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/manyusers"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// DefaultUsersStartTimeout bounds the wait for every relay user's first
// byte.
const DefaultUsersStartTimeout = 90 * time.Second

// DefaultRelayUsers are the session counts of a many-user relay run.
var DefaultRelayUsers = []int{100, 500, 2000}

// RelayUsersConfig configures RunRelayUsers: several relays (each
// implementation's server binary) side by side under many active users.
type RelayUsersConfig struct {
	// Implementations are the relays to measure, by their Server binary
	// (the other roles are not used). Each is started as tor starts a
	// managed pluggable transport, afresh for every run. At least one.
	Implementations []chainproc.Implementation
	// Sessions are the numbers of concurrent users to measure, each a
	// session of its own (ClientID, carrier, KCP, smux) with one stream.
	// Default DefaultRelayUsers.
	Sessions []int
	// Rounds is how many runs each implementation gets at each count,
	// in an order that alternates from round to round. Default
	// DefaultUsersRounds.
	Rounds int
	// Mix is what the users do.
	Mix manyusers.UserMix
	// Duration is the measured window, after every user has received a
	// byte and WarmUp has passed. Defaults DefaultUsersDuration and
	// DefaultUsersWarmUp.
	Duration, WarmUp time.Duration
	// StartTimeout bounds the wait for every user's first byte. Default
	// DefaultUsersStartTimeout.
	StartTimeout time.Duration
	// DialConcurrency bounds concurrent carrier handshakes. Default
	// DefaultDialConcurrency.
	DialConcurrency int
	// HandshakeTimeout bounds each WebSocket handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// Dir receives each run's server logs. Required.
	Dir string
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// RelayUsersRun is one relay under one number of users.
type RelayUsersRun struct {
	Implementation string `json:"implementation"`
	Sessions       int    `json:"sessions"` // asked for
	Round          int    `json:"round"`
	Opened         int    `json:"opened"`  // sessions whose stream opened
	Started        int    `json:"started"` // users with a first byte before the window
	// FailedUsers counts users whose stream broke before the run ended.
	FailedUsers    int64   `json:"failed_users"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// MB is the users' payload over the window, down and up (10^6 bytes).
	MB       float64 `json:"mb"`
	MBPerSec float64 `json:"mb_per_sec"`
	// RelayCPUSeconds is the relay's CPU time over the window, CPUMsPerMB
	// that per MB.
	RelayCPUSeconds float64 `json:"relay_cpu_seconds"`
	CPUMsPerMB      float64 `json:"cpu_ms_per_mb"`
	// ReadsPerMB and WritesPerMB are the relay's read and write system
	// calls over the window per MB (sockets to proxies and to the target).
	ReadsPerMB  float64 `json:"reads_per_mb"`
	WritesPerMB float64 `json:"writes_per_mb"`
	// DuplicatePercent is the share of the KCP segments the users received
	// over the window that they had already received: the relay's
	// needless retransmissions that got through.
	DuplicatePercent float64 `json:"duplicate_percent"`
	// LoadgenCPUPercent is the load generator's own CPU over the window
	// (100: one core), which shares the machine with the relay.
	LoadgenCPUPercent float64 `json:"loadgen_cpu_percent"`
	// BaselineRSS is the relay's RSS before the first session, RSS the
	// median over the window, PeakRSS its VmHWM at the window's end.
	BaselineRSS int64 `json:"baseline_rss_bytes"`
	RSS         int64 `json:"rss_bytes"`
	PeakRSS     int64 `json:"peak_rss_bytes"`
	// BytesPerSession is (RSS - BaselineRSS) / Opened.
	BytesPerSession float64 `json:"bytes_per_session"`
	// SocketMemory is the growth of TCP socket memory (every socket of the
	// machine: carriers and target connections at both ends) from before
	// the first session to the middle of the window.
	SocketMemory    int64                 `json:"socket_memory_bytes"`
	Classes         []manyusers.UserClass `json:"classes"`
	SlowestToMedian float64               `json:"slowest_to_median"`
	// Latency is the interactive users' request to full response, over
	// the window.
	Latency      measure.Percentiles `json:"latency"`
	ErrorSamples []string            `json:"error_samples,omitempty"`
}

// RelayUsersSummary is one implementation at one count, over its rounds:
// medians, except SlowestToMedian (the lowest) and FailedUsers (the sum).
type RelayUsersSummary struct {
	Implementation  string  `json:"implementation"`
	Sessions        int     `json:"sessions"`
	Runs            int     `json:"runs"`
	MBPerSec        float64 `json:"mb_per_sec"`
	CPUMsPerMB      float64 `json:"cpu_ms_per_mb"`
	BytesPerSession float64 `json:"bytes_per_session"`
	PeakRSS         int64   `json:"peak_rss_bytes"`
	SocketMemory    int64   `json:"socket_memory_bytes"`
	SlowestToMedian float64 `json:"slowest_to_median"`
	LatencyP50Ms    float64 `json:"latency_p50_ms"`
	LatencyP99Ms    float64 `json:"latency_p99_ms"`
	FailedUsers     int64   `json:"failed_users"`
	Opened          int     `json:"opened"` // lowest over the runs
}

// RelayUsersResult is what RunRelayUsers measured.
type RelayUsersResult struct {
	Mix             manyusers.UserMix   `json:"mix"`
	DurationSeconds float64             `json:"duration_seconds"`
	Runs            []RelayUsersRun     `json:"runs"`
	Summaries       []RelayUsersSummary `json:"summaries"`
}

func (cfg RelayUsersConfig) withDefaults() (RelayUsersConfig, error) {
	if len(cfg.Implementations) == 0 {
		return cfg, fmt.Errorf("%w: no implementation", measure.ErrInvalidConfig)
	}
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: no work directory", measure.ErrInvalidConfig)
	}
	if err := chainproc.DistinctNames(cfg.Implementations); err != nil {
		return cfg, err
	}
	for _, im := range cfg.Implementations {
		if im.Server == "" {
			return cfg, fmt.Errorf("%w: %s has no server binary", measure.ErrInvalidConfig, im.Name)
		}
	}
	cfg.Sessions = slices.Clone(cfg.Sessions)
	if len(cfg.Sessions) == 0 {
		cfg.Sessions = slices.Clone(DefaultRelayUsers)
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
		cfg.StartTimeout = DefaultUsersStartTimeout
	}
	if cfg.DialConcurrency == 0 {
		cfg.DialConcurrency = wscarrier.DefaultDialConcurrency
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = wscarrier.DefaultHandshakeTimeout
	}
	var err error
	if cfg.Mix, err = cfg.Mix.WithDefaults(); err != nil {
		return cfg, err
	}
	switch {
	case slices.Min(cfg.Sessions) < 1 || slices.Max(cfg.Sessions) > 20_000:
		return cfg, fmt.Errorf("%w: sessions out of range 1..20000", measure.ErrInvalidConfig)
	case cfg.Rounds < 1 || cfg.Rounds > 100:
		return cfg, fmt.Errorf("%w: rounds out of range 1..100", measure.ErrInvalidConfig)
	case cfg.Duration < 0 || cfg.WarmUp < 0 || cfg.StartTimeout < 0 || cfg.HandshakeTimeout < 0:
		return cfg, fmt.Errorf("%w: negative duration", measure.ErrInvalidConfig)
	case cfg.DialConcurrency < 1 || cfg.DialConcurrency > 10_000:
		return cfg, fmt.Errorf("%w: dial concurrency out of range 1..10000", measure.ErrInvalidConfig)
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	return cfg, nil
}

// RunRelayUsers measures each implementation's relay under each number of
// concurrent users: for every count and round, each relay in turn (the
// order alternating) is started afresh, forwarding to a tcptarget.Mixed
// target of the load generator's; the users connect as proxies would
// (a WebSocket carrier with the turbotunnel token and a ClientID of its
// own, from addresses of 127.0.0.0/8 in turn, KCP and smux with
// Snowflake's parameters), each opens one stream and does what the mix
// says, and once every user has received a byte and the warm-up has
// passed the run measures the relay's CPU time, memory and each user's
// rate over the window.
func RunRelayUsers(ctx context.Context, cfg RelayUsersConfig) (RelayUsersResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return RelayUsersResult{}, err
	}
	res := RelayUsersResult{Mix: cfg.Mix, DurationSeconds: measure.Seconds(cfg.Duration)}
	// Per session: the load generator's carrier and target connection.
	if _, err := measure.RaiseFileLimit(2*uint64(slices.Max(cfg.Sessions)) + 512); err != nil {
		return res, err
	}
	target, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Mixed})
	if err != nil {
		return res, err
	}
	defer target.Close()
	for _, n := range cfg.Sessions {
		for round := range cfg.Rounds {
			for _, im := range chainproc.Alternate(cfg.Implementations, round) {
				dir := filepath.Join(cfg.Dir, fmt.Sprintf("%s-%d-%d", im.Name, n, round+1))
				run, err := runRelayUsersOnce(ctx, cfg, im, n, dir, target.Addr())
				run.Round = round + 1
				res.Runs = append(res.Runs, run)
				measure.Say(cfg.Progress, "%s, %d users, round %d: %d opened, %.1f MB/s, relay %.2f ms CPU/MB (%.0f reads, %.0f writes per MB, %.1f%% duplicates), %.1f KiB/session, slowest/median %.2f, p99 %.0f ms, %d failed",
					im.Name, n, round+1, run.Opened, run.MBPerSec, run.CPUMsPerMB, run.ReadsPerMB, run.WritesPerMB, run.DuplicatePercent, run.BytesPerSession/1024, run.SlowestToMedian, run.Latency.P99Ms, run.FailedUsers)
				if err != nil {
					return res, fmt.Errorf("%s, %d users: %w", im.Name, n, err)
				}
			}
		}
	}
	for _, n := range cfg.Sessions {
		for _, im := range cfg.Implementations {
			res.Summaries = append(res.Summaries, summarizeRelayUsers(res.Runs, im.Name, n))
		}
	}
	return res, nil
}

// runRelayUsersOnce starts im's relay, runs n users through it and stops
// it.
func runRelayUsersOnce(ctx context.Context, cfg RelayUsersConfig, im chainproc.Implementation, n int, dir, orport string) (RelayUsersRun, error) {
	run := RelayUsersRun{Implementation: im.Name, Sessions: n}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return run, err
	}
	server, addr, err := chainproc.StartManagedServer(ctx, dir, im, orport)
	if err != nil {
		return run, err
	}
	defer chainproc.StopChild(server)
	proc := procstat.Watcher{PID: server.PID()}
	sleep.For(ctx, time.Second)
	base, _, err := proc.Sample()
	if err != nil {
		return run, err
	}
	run.BaselineRSS = base.RSS
	sock0, _ := procstat.SocketMemory("TCP")

	var (
		errs    measure.ErrorSamples
		set     wscarrier.TunnelSet
		users   = manyusers.NewGroup(cfg.Mix, n, &errs)
		workers sync.WaitGroup
	)
	userCtx, stopUsers := context.WithCancel(ctx)
	defer func() {
		users.Stopping.Store(true)
		stopUsers()
		set.CloseAll()
		workers.Wait()
	}()
	measure.Say(cfg.Progress, "%s: opening %d sessions", im.Name, n)
	if run.Opened, err = openRelaySessions(ctx, userCtx, cfg, addr, users, &set, &workers); err != nil {
		return run, err
	}
	run.Started = users.WaitStarted(ctx, cfg.StartTimeout)
	if run.Started == 0 {
		run.ErrorSamples = errs.Get()
		return run, fmt.Errorf("%w: no user received a byte (%v)", measure.ErrNoProgress, run.ErrorSamples)
	}
	sleep.For(ctx, cfg.WarmUp)
	w, err := measureRelayWindow(ctx, cfg, fmt.Sprintf("%s, %d users", im.Name, n), proc, users, sock0)
	if err != nil {
		return run, err
	}
	w.fill(&run, users)
	run.ErrorSamples = errs.Get()
	return run, ctx.Err()
}

// openRelaySessions opens one session per user of users through the relay
// at addr, each user running on its stream under userCtx, and returns how
// many opened.
func openRelaySessions(ctx, userCtx context.Context, cfg RelayUsersConfig, addr string, users *manyusers.Group, set *wscarrier.TunnelSet, workers *sync.WaitGroup) (int, error) {
	u, err := measure.ParseURL("ws://"+addr+"/", false, "ws")
	if err != nil {
		return 0, err
	}
	d, err := RelayRun{SourcePrefix: wscarrier.DefaultSourcePrefix, HandshakeTimeout: cfg.HandshakeTimeout}.dialer(u)
	if err != nil {
		return 0, err
	}
	var next, opened atomic.Int64
	measure.RunPool(ctx, cfg.DialConcurrency, users.Len(), func() {
		i := int(next.Add(1) - 1)
		t, err := wscarrier.OpenTunnel(ctx, d, u)
		if err != nil {
			users.Fail(i, "carrier: "+err.Error())
			return
		}
		set.AddTunnel(t)
		st, err := t.Mux.OpenStream()
		if err != nil {
			users.Fail(i, "open stream: "+err.Error())
			return
		}
		opened.Add(1)
		workers.Go(func() { users.Run(userCtx, i, st) })
	})
	return int(opened.Load()), nil
}

// relayWindow is what the measured window of a relay-users run saw: the
// relay's and the load generator's counters at either end, the relay's
// RSS samples and the users' counts.
type relayWindow struct {
	elapsed      time.Duration
	cpu0, cpu1   procstat.ProcSample // the relay's
	me0, me1     procstat.ProcSample // the load generator's
	io0, io1     procstat.ProcIO     // the relay's
	ioOK         bool
	kcp0, kcp1   *kcp.Snmp
	rss          []int64
	socketMemory int64 // growth of TCP socket memory, taken mid-window
	users        manyusers.WindowCounts
}

// measureRelayWindow measures cfg.Duration of the running users; name
// labels its progress lines.
func measureRelayWindow(ctx context.Context, cfg RelayUsersConfig, name string, proc procstat.Watcher, users *manyusers.Group, sock0 int64) (relayWindow, error) {
	var w relayWindow
	self := procstat.Watcher{PID: os.Getpid()}
	users.Measuring.Store(true)
	a := users.Snapshot()
	var err error
	if w.cpu0, _, err = proc.Sample(); err != nil {
		return w, err
	}
	w.me0, _, _ = self.Sample()
	io0, ioErr := procstat.ReadProcIO(proc.PID)
	w.kcp0 = kcp.DefaultSnmp.Copy()
	start := time.Now()
	sockTaken := false
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		return fmt.Sprintf("%s: %.0fs/%v measured", name, time.Since(start).Seconds(), cfg.Duration)
	})
	for time.Since(start) < cfg.Duration && ctx.Err() == nil {
		sleep.For(ctx, min(500*time.Millisecond, cfg.Duration-time.Since(start)))
		if s, ok, _ := proc.Sample(); ok {
			w.rss = append(w.rss, s.RSS)
		}
		if !sockTaken && time.Since(start) >= cfg.Duration/2 {
			if m, err := procstat.SocketMemory("TCP"); err == nil {
				w.socketMemory = m - sock0
			}
			sockTaken = true
		}
	}
	prog.Stop()
	if w.cpu1, _, err = proc.Sample(); err != nil {
		return w, err
	}
	w.me1, _, _ = self.Sample()
	io1, ioErr1 := procstat.ReadProcIO(proc.PID)
	w.kcp1 = kcp.DefaultSnmp.Copy()
	b := users.Snapshot()
	w.elapsed = time.Since(start)
	users.Measuring.Store(false)
	w.io0, w.io1, w.ioOK = io0, io1, ioErr == nil && ioErr1 == nil
	w.users = users.Window(a, b, w.elapsed)
	return w, nil
}

// fill computes run's figures from the window.
func (w relayWindow) fill(run *RelayUsersRun, users *manyusers.Group) {
	run.SocketMemory = w.socketMemory
	run.ElapsedSeconds = measure.Seconds(w.elapsed)
	run.MB = measure.Round3(float64(w.users.Bytes) / 1e6)
	run.MBPerSec = measure.Round3(run.MB / w.elapsed.Seconds())
	run.RelayCPUSeconds = measure.Round3((w.cpu1.CPU - w.cpu0.CPU).Seconds())
	if run.MB > 0 {
		run.CPUMsPerMB = measure.Round3(run.RelayCPUSeconds * 1000 / run.MB)
		if w.ioOK {
			run.ReadsPerMB = measure.Round3(float64(w.io1.Reads-w.io0.Reads) / run.MB)
			run.WritesPerMB = measure.Round3(float64(w.io1.Writes-w.io0.Writes) / run.MB)
		}
	}
	run.LoadgenCPUPercent = measure.Round3(procstat.CPUPercent(w.me0, w.me1))
	if in := w.kcp1.InSegs - w.kcp0.InSegs; in > 0 {
		run.DuplicatePercent = measure.Round3(100 * float64(w.kcp1.RepeatSegs-w.kcp0.RepeatSegs) / float64(in))
	}
	run.RSS, run.PeakRSS = measure.Median(w.rss), w.cpu1.HWM
	if run.Opened > 0 {
		run.BytesPerSession = float64(run.RSS-run.BaselineRSS) / float64(run.Opened)
	}
	run.Classes = w.users.Classes
	run.SlowestToMedian = manyusers.SlowestToMedian(w.users.Classes)
	run.Latency = users.Latency.Percentiles()
	run.FailedUsers = users.Failed.Load()
}

func summarizeRelayUsers(runs []RelayUsersRun, name string, n int) RelayUsersSummary {
	s := RelayUsersSummary{Implementation: name, Sessions: n}
	var rate, cpu, per, p50, p99 []float64
	var peak, sock []int64
	for _, r := range runs {
		if r.Implementation != name || r.Sessions != n || r.MB == 0 {
			continue
		}
		if s.Runs == 0 || r.SlowestToMedian < s.SlowestToMedian {
			s.SlowestToMedian = r.SlowestToMedian
		}
		if s.Runs == 0 || r.Opened < s.Opened {
			s.Opened = r.Opened
		}
		s.Runs++
		rate, cpu, per = append(rate, r.MBPerSec), append(cpu, r.CPUMsPerMB), append(per, r.BytesPerSession)
		p50, p99 = append(p50, r.Latency.P50Ms), append(p99, r.Latency.P99Ms)
		peak, sock = append(peak, r.PeakRSS), append(sock, r.SocketMemory)
		s.FailedUsers += r.FailedUsers
	}
	s.MBPerSec, s.CPUMsPerMB, s.BytesPerSession = measure.MedianFloat(rate), measure.MedianFloat(cpu), measure.MedianFloat(per)
	s.LatencyP50Ms, s.LatencyP99Ms = measure.MedianFloat(p50), measure.MedianFloat(p99)
	s.PeakRSS, s.SocketMemory = measure.Median(peak), measure.Median(sock)
	return s
}

// WriteRelayUsersTable prints one block per count, one row per
// implementation, with ratios to the first implementation.
func WriteRelayUsersTable(w io.Writer, r RelayUsersResult) error {
	if len(r.Summaries) == 0 {
		_, err := fmt.Fprintln(w, "no results")
		return err
	}
	m := r.Mix
	fmt.Fprintf(w, "relay under many users: %.0f%% bulk, interactive %d B request / %d B response / %v think; %.0f s windows (medians over rounds; ratio to %s)\n",
		m.BulkShare*100, m.RequestBytes, m.ResponseBytes, m.Think, r.DurationSeconds, r.Summaries[0].Implementation)
	fmt.Fprintf(w, "%-7s %-16s %5s %9s %18s %20s %11s %12s %9s %13s %7s\n",
		"users", "relay", "runs", "MB/s", "CPU ms/MB", "RSS/session KiB", "peak MiB", "sockets MiB", "slow/med", "p50/p99 ms", "failed")
	var base RelayUsersSummary
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
		fmt.Fprintf(w, "%-7d %-16s %5d %9.1f %18s %20s %11.1f %12.1f %9.2f %13s %7d\n",
			s.Sessions, s.Implementation, s.Runs, s.MBPerSec,
			fmt.Sprintf("%.2f%s", s.CPUMsPerMB, ratio(s.CPUMsPerMB, base.CPUMsPerMB)),
			fmt.Sprintf("%.1f%s", s.BytesPerSession/1024, ratio(s.BytesPerSession, base.BytesPerSession)),
			float64(s.PeakRSS)/(1<<20), float64(s.SocketMemory)/(1<<20), s.SlowestToMedian,
			fmt.Sprintf("%.0f/%.0f", s.LatencyP50Ms, s.LatencyP99Ms), s.FailedUsers)
	}
	return nil
}
