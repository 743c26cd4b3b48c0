package soak

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// RunSoak: a whole chain of real binaries (package demo's
// Cluster: target, relay, broker, natprobe, proxies and a long-lived client
// in SOCKS mode) runs for a long time under churn: clients arrive (new
// flurry-client processes) and leave, downloads go through them and the
// long-lived client, a proxy is SIGKILLed and restarted every
// ProxyKillInterval, the broker restarts every BrokerRestartInterval. Every
// SampleInterval each process's RSS and goroutines (go_goroutines from its
// metrics where it serves them, else its threads from /proc) are sampled;
// each process run ("incarnation": a restart starts a new one) is reported
// with its value after warm-up, its value at the end and the slope between,
// and flagged when it grows.

// Defaults of SoakConfig.
const (
	DefaultSoakDuration         = 30 * time.Minute
	DefaultSoakProxies          = 3
	DefaultSoakSampleInterval   = 5 * time.Second
	DefaultSoakProxyKill        = 30 * time.Second
	DefaultSoakClientInterval   = 20 * time.Second
	DefaultSoakClientLife       = 45 * time.Second
	DefaultSoakDownloadInterval = 2 * time.Second
	DefaultSoakFileSize         = 256 << 10

	soakDownloadTimeout = 60 * time.Second
	// Growth thresholds: an incarnation is flagged when its end value
	// exceeds its warm-up value by more than the larger of the relative
	// and the absolute margin, and its slope is positive.
	soakRSSGrowth        = 0.20
	soakRSSGrowthAbs     = 4 << 20
	soakCountGrowth      = 0.20
	soakCountGrowthAbs   = 10
	maxSoakDuration      = 24 * time.Hour
	maxSoakProxies       = 32
	soakSamplesToAverage = 3
)

// SoakConfig configures RunSoak.
type SoakConfig struct {
	// Binaries are Flurry's executables. Required.
	Binaries demo.Binaries
	// Dir receives the processes' logs. Required.
	Dir string
	// Duration of the whole soak. Default DefaultSoakDuration.
	Duration time.Duration
	// WarmUp: samples before it are not judged. Default a fifth of
	// Duration.
	WarmUp time.Duration
	// Proxies is the number of proxies. The first is never killed (a
	// process that lives the whole soak); the others are killed in
	// turn. Default DefaultSoakProxies (at least 2).
	Proxies int
	// SampleInterval is the time between two samples. Default
	// DefaultSoakSampleInterval.
	SampleInterval time.Duration
	// ProxyKillInterval: one proxy is SIGKILLed and restarted this often.
	// Default DefaultSoakProxyKill; negative: never.
	ProxyKillInterval time.Duration
	// BrokerRestartInterval: the broker restarts (SIGTERM, start) this
	// often. Default half of Duration (one restart, so that both of the
	// broker's runs are long enough to judge); negative: never.
	BrokerRestartInterval time.Duration
	// ClientInterval: a new client process arrives this often and leaves
	// after ClientLife, downloading meanwhile. Defaults
	// DefaultSoakClientInterval and DefaultSoakClientLife; a negative
	// ClientInterval: none (only the long-lived client).
	ClientInterval, ClientLife time.Duration
	// DownloadInterval is the pause between two downloads of each
	// client. Default DefaultSoakDownloadInterval.
	DownloadInterval time.Duration
	// FileSize is the target's file. Default DefaultSoakFileSize.
	FileSize int64
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// SoakResult is what RunSoak measured.
type SoakResult struct {
	DurationSeconds       float64 `json:"duration_seconds"`
	WarmUpSeconds         float64 `json:"warm_up_seconds"`
	SampleIntervalSeconds float64 `json:"sample_interval_seconds"`
	Proxies               int     `json:"proxies"`
	ProxyKills            int64   `json:"proxy_kills"`
	BrokerRestarts        int64   `json:"broker_restarts"`
	ClientsArrived        int64   `json:"clients_arrived"`
	// Downloads through every client; Failed ones did not complete or
	// had the wrong SHA-256 (a broker restart or a killed proxy may
	// cause that; the next download must work).
	Downloads       int64         `json:"downloads"`
	DownloadsOK     int64         `json:"downloads_ok"`
	DownloadsFailed int64         `json:"downloads_failed"`
	BytesOK         int64         `json:"bytes_ok"`
	Processes       []*SoakSeries `json:"processes"`
	// Growing names the incarnations flagged as growing.
	Growing      []string `json:"growing,omitempty"`
	ErrorSamples []string `json:"error_samples,omitempty"`
}

// SoakSeries is one process incarnation's samples and verdict.
type SoakSeries struct {
	Name string `json:"name"`
	PID  int    `json:"pid"`
	// CountKind is "goroutines" (go_goroutines) or "threads" (/proc).
	CountKind string       `json:"count_kind"`
	Samples   []SoakSample `json:"samples"`
	// Judged is false for an incarnation too short to judge (less than
	// two warm-ups, or fewer than six samples after warm-up).
	Judged bool `json:"judged"`
	// WarmRSS and WarmCount: mean of the first samples after warm-up;
	// EndRSS and EndCount: mean of the last samples.
	WarmRSS   int64   `json:"warm_rss_bytes"`
	EndRSS    int64   `json:"end_rss_bytes"`
	WarmCount float64 `json:"warm_count"`
	EndCount  float64 `json:"end_count"`
	// Slopes over the samples after warm-up (least squares), per minute.
	RSSSlopeKiBPerMin  float64 `json:"rss_slope_kib_per_min"`
	CountSlopePerMin   float64 `json:"count_slope_per_min"`
	Growing            bool    `json:"growing"`
	GrowingWhat        string  `json:"growing_what,omitempty"`
	start, lastSampled time.Time
}

// SoakSample is one sample of a process.
type SoakSample struct {
	Seconds float64 `json:"t"` // since the soak started
	RSS     int64   `json:"rss"`
	Count   float64 `json:"count"`
}

func (cfg SoakConfig) withDefaults() (SoakConfig, error) {
	if err := cfg.Binaries.Check(); err != nil {
		return cfg, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
	}
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: SoakConfig.Dir is required", measure.ErrInvalidConfig)
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultSoakDuration
	}
	if cfg.WarmUp == 0 {
		cfg.WarmUp = cfg.Duration / 5
	}
	if cfg.Proxies == 0 {
		cfg.Proxies = DefaultSoakProxies
	}
	if cfg.SampleInterval == 0 {
		cfg.SampleInterval = DefaultSoakSampleInterval
	}
	if cfg.ProxyKillInterval == 0 {
		cfg.ProxyKillInterval = DefaultSoakProxyKill
	}
	if cfg.BrokerRestartInterval == 0 {
		cfg.BrokerRestartInterval = cfg.Duration / 2
	}
	if cfg.ClientInterval == 0 {
		cfg.ClientInterval = DefaultSoakClientInterval
	}
	if cfg.ClientLife == 0 {
		cfg.ClientLife = DefaultSoakClientLife
	}
	if cfg.DownloadInterval == 0 {
		cfg.DownloadInterval = DefaultSoakDownloadInterval
	}
	if cfg.FileSize == 0 {
		cfg.FileSize = DefaultSoakFileSize
	}
	switch {
	case cfg.Duration < 0 || cfg.Duration > maxSoakDuration:
		return cfg, fmt.Errorf("%w: duration %v out of range 0..%v", measure.ErrInvalidConfig, cfg.Duration, maxSoakDuration)
	case cfg.WarmUp < 0 || cfg.WarmUp >= cfg.Duration:
		return cfg, fmt.Errorf("%w: warm-up %v must be shorter than the duration", measure.ErrInvalidConfig, cfg.WarmUp)
	case cfg.Proxies < 2 || cfg.Proxies > maxSoakProxies:
		return cfg, fmt.Errorf("%w: proxies %d out of range 2..%d", measure.ErrInvalidConfig, cfg.Proxies, maxSoakProxies)
	case cfg.SampleInterval < 100*time.Millisecond || cfg.ClientLife < 0 || cfg.DownloadInterval < 0:
		return cfg, fmt.Errorf("%w: sample interval under 100ms, or a negative client life or download interval", measure.ErrInvalidConfig)
	case cfg.FileSize < 0 || cfg.FileSize > 1<<30:
		return cfg, fmt.Errorf("%w: file size %d out of range 0..1 GiB", measure.ErrInvalidConfig, cfg.FileSize)
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	return cfg, nil
}

// soakRun is the state of one RunSoak.
type soakRun struct {
	cfg     SoakConfig
	c       *demo.Cluster
	scraper *demo.HTTPScraper
	start   time.Time
	errs    measure.ErrorSamples

	downloads, ok, failed, bytes, kills, restarts, arrived atomic.Int64

	mu     sync.Mutex
	series map[string]*SoakSeries // by name and PID
	order  []*SoakSeries
}

// RunSoak runs the soak described by cfg (see SoakConfig) and returns its
// figures. It stops every process it started before it returns.
func RunSoak(ctx context.Context, cfg SoakConfig) (SoakResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return SoakResult{}, err
	}
	res := SoakResult{
		DurationSeconds: measure.Seconds(cfg.Duration), WarmUpSeconds: measure.Seconds(cfg.WarmUp),
		SampleIntervalSeconds: measure.Seconds(cfg.SampleInterval), Proxies: cfg.Proxies,
	}
	measure.Say(cfg.Progress, "soak: starting the chain (logs in %s)", cfg.Dir)
	c, err := demo.Start(ctx, demo.Config{
		Binaries: cfg.Binaries, Dir: cfg.Dir, Proxies: cfg.Proxies, NATProbe: true, FileSize: cfg.FileSize,
	})
	if err != nil {
		return res, err
	}
	r := &soakRun{cfg: cfg, c: c, scraper: demo.NewHTTPScraper(), start: time.Now(), series: map[string]*SoakSeries{}}
	defer r.scraper.Close()
	runCtx, cancel := context.WithTimeout(ctx, cfg.Duration)
	var wg sync.WaitGroup
	wg.Go(func() { r.sampleLoop(runCtx) })
	wg.Go(func() { r.downloadLoop(runCtx, "client", c.SOCKSAddr) })
	if cfg.ProxyKillInterval > 0 {
		wg.Go(func() { r.proxyKillLoop(runCtx) })
	}
	if cfg.BrokerRestartInterval > 0 {
		wg.Go(func() { r.brokerRestartLoop(runCtx) })
	}
	if cfg.ClientInterval > 0 {
		wg.Go(func() { r.clientArrivals(runCtx) })
	}
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		return fmt.Sprintf("soak: %v of %v; %d downloads (%d failed), %d proxy kills, %d broker restarts, %d clients arrived",
			time.Since(r.start).Round(time.Second), cfg.Duration, r.downloads.Load(), r.failed.Load(), r.kills.Load(), r.restarts.Load(), r.arrived.Load())
	})
	wg.Wait()
	cancel()
	prog.Stop()
	if err := c.Close(); err != nil {
		r.errs.Add("stopping the chain: " + err.Error())
	}

	res.ProxyKills, res.BrokerRestarts, res.ClientsArrived = r.kills.Load(), r.restarts.Load(), r.arrived.Load()
	res.Downloads, res.DownloadsOK, res.DownloadsFailed, res.BytesOK = r.downloads.Load(), r.ok.Load(), r.failed.Load(), r.bytes.Load()
	for _, s := range r.order {
		s.judge(cfg.WarmUp, r.start)
		res.Processes = append(res.Processes, s)
		if s.Growing {
			res.Growing = append(res.Growing, fmt.Sprintf("%s (pid %d): %s", s.Name, s.PID, s.GrowingWhat))
		}
	}
	res.ErrorSamples = r.errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.DownloadsOK == 0 {
		return res, fmt.Errorf("%w: no download completed", measure.ErrNoProgress)
	}
	return res, nil
}

// sampleLoop samples every process every SampleInterval.
func (r *soakRun) sampleLoop(ctx context.Context) {
	for {
		r.sampleAll(ctx)
		if !sleep.For(ctx, r.cfg.SampleInterval) {
			return
		}
	}
}

// soakTarget is one process to sample and where its goroutines are.
type soakTarget struct {
	name       string
	p          *childproc.Process
	metricsURL string // "" : threads from /proc
}

func (r *soakRun) targets() []soakTarget {
	c := r.c
	ts := []soakTarget{
		{"broker", c.Broker, "http://" + c.BrokerMetricsAddrs[0] + "/prometheus"},
		{"relay", c.Relay, c.RelayMetricsURL},
		{"natprobe", c.NATProbe, ""},
		{"client", c.Client, ""},
	}
	for _, p := range c.Proxies() {
		ts = append(ts, soakTarget{p.Name(), p.Process, p.MetricsURL})
	}
	return ts
}

func (r *soakRun) sampleAll(ctx context.Context) {
	for _, t := range r.targets() {
		if t.p == nil || !t.p.Running() {
			continue
		}
		pid := t.p.PID()
		ps, err := procstat.ReadProc(pid)
		if err != nil {
			continue // exited meanwhile
		}
		kind, count := "threads", float64(0)
		if t.metricsURL != "" {
			mctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			v, err := r.scraper.Metric(mctx, t.metricsURL, "go_goroutines")
			cancel()
			if err == nil {
				kind, count = "goroutines", v
			} else if ctx.Err() != nil {
				return
			}
		}
		if kind == "threads" {
			if count, err = readThreads(pid); err != nil {
				continue
			}
		}
		r.add(t.name, pid, kind, SoakSample{Seconds: measure.Seconds(time.Since(r.start)), RSS: ps.RSS, Count: count})
	}
}

// add appends a sample to the series of (name, pid). A process whose
// metrics failed once keeps counting goroutines; one whose metrics came up
// only after its first samples (a broker just restarted) starts its series
// again with them.
func (r *soakRun) add(name string, pid int, kind string, s SoakSample) {
	r.mu.Lock()
	defer r.mu.Unlock()
	key := name + "/" + strconv.Itoa(pid)
	ser := r.series[key]
	if ser == nil {
		ser = &SoakSeries{Name: name, PID: pid, CountKind: kind, start: time.Now()}
		r.series[key] = ser
		r.order = append(r.order, ser)
	}
	if kind != ser.CountKind {
		if kind != "goroutines" {
			return
		}
		ser.CountKind, ser.Samples = kind, nil
	}
	ser.Samples = append(ser.Samples, s)
	ser.lastSampled = time.Now()
}

// readThreads returns the Threads: line of /proc/PID/status.
func readThreads(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, fmt.Errorf("%w: %w", procstat.ErrProcStats, err)
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("Threads:")); ok {
			n, err := strconv.Atoi(string(bytes.TrimSpace(v)))
			if err != nil {
				return 0, fmt.Errorf("%w: threads %q", procstat.ErrProcStats, bytes.TrimSpace(v))
			}
			return float64(n), nil
		}
	}
	return 0, fmt.Errorf("%w: no Threads in status", procstat.ErrProcStats)
}

// downloadLoop downloads the target's file through socks until ctx ends.
func (r *soakRun) downloadLoop(ctx context.Context, who, socks string) {
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, soakDownloadTimeout)
		res, err := demo.FetchTarget(dctx, socks, r.c.Target, nil)
		cancel()
		if ctx.Err() != nil {
			return
		}
		r.downloads.Add(1)
		if err != nil {
			r.failed.Add(1)
			r.errs.Add(who + " download: " + err.Error())
		} else {
			r.ok.Add(1)
			r.bytes.Add(res.Bytes)
		}
		sleep.For(ctx, r.cfg.DownloadInterval)
	}
}

// proxyKillLoop SIGKILLs one proxy (never the first) every
// ProxyKillInterval and starts it again.
func (r *soakRun) proxyKillLoop(ctx context.Context) {
	for i := 0; sleep.For(ctx, r.cfg.ProxyKillInterval); i++ {
		ps := r.c.Proxies()
		victim := ps[1+i%(len(ps)-1)]
		victim.Kill()
		r.kills.Add(1)
		if err := victim.Start(ctx); err != nil && ctx.Err() == nil {
			r.errs.Add("proxy restart: " + err.Error())
		}
	}
}

// brokerRestartLoop restarts the broker every BrokerRestartInterval.
func (r *soakRun) brokerRestartLoop(ctx context.Context) {
	for sleep.For(ctx, r.cfg.BrokerRestartInterval) {
		measure.Say(r.cfg.Progress, "soak: restarting the broker")
		r.restarts.Add(1)
		if err := r.c.Broker.Restart(ctx, 0); err != nil && ctx.Err() == nil {
			r.errs.Add("broker restart: " + err.Error())
		}
	}
}

// clientArrivals starts a new client process every ClientInterval; each
// downloads for ClientLife and leaves (SIGTERM).
func (r *soakRun) clientArrivals(ctx context.Context) {
	args := []string{"-url", r.c.BrokerURL, "-max", "1", "-unsafe-logging"}
	if demo.ListFlags(ctx, r.cfg.Binaries.Client)["loopback-only"] {
		args = append(args, "-loopback-only")
	}
	var clients sync.WaitGroup
	defer clients.Wait()
	for i := 1; ctx.Err() == nil; i++ {
		clients.Go(func() { r.visit(ctx, i, args) })
		if !sleep.For(ctx, r.cfg.ClientInterval) {
			return
		}
	}
}

// visit is client process i: it starts, downloads until ClientLife has
// passed, and stops.
func (r *soakRun) visit(ctx context.Context, i int, args []string) {
	socks, err := demo.FreeAddr()
	if err != nil {
		r.errs.Add("visiting client: " + err.Error())
		return
	}
	name := fmt.Sprintf("visitor-%d", i)
	p, err := childproc.Start(ctx, childproc.Config{
		Name: name, Path: r.cfg.Binaries.Client, LogPath: filepath.Join(r.c.Dir(), name+".log"),
		Supervisor: "demo",
		Args:       append([]string{"-socks", socks}, args...), Ready: demo.TCPReady(socks),
	})
	if err != nil {
		if ctx.Err() == nil {
			r.errs.Add("visiting client: " + err.Error())
		}
		if p != nil {
			p.Kill()
		}
		return
	}
	r.arrived.Add(1)
	lifeCtx, cancel := context.WithTimeout(ctx, r.cfg.ClientLife)
	r.downloadLoop(lifeCtx, "visiting client", socks)
	cancel()
	if err := p.Stop(5 * time.Second); err != nil {
		r.errs.Add("visiting client stop: " + err.Error())
	}
	_ = os.Remove(p.LogPath()) // hundreds of visitors: keep the directory small
}

// judge computes s's warm-up and end values, slopes and verdict; samples
// before warmUp after the soak's start (or after the incarnation's own
// start, whichever is later) are the warm-up.
func (s *SoakSeries) judge(warmUp time.Duration, soakStart time.Time) {
	from := max(s.start.Sub(soakStart), 0) + warmUp
	var after []SoakSample
	for _, x := range s.Samples {
		if time.Duration(x.Seconds*float64(time.Second)) >= from {
			after = append(after, x)
		}
	}
	if len(after) < 2*soakSamplesToAverage {
		return
	}
	mean := func(xs []SoakSample) (rss, count float64) {
		for _, x := range xs {
			rss += float64(x.RSS)
			count += x.Count
		}
		return rss / float64(len(xs)), count / float64(len(xs))
	}
	wr, wc := mean(after[:soakSamplesToAverage])
	er, ec := mean(after[len(after)-soakSamplesToAverage:])
	s.WarmRSS, s.EndRSS, s.WarmCount, s.EndCount = int64(wr), int64(er), wc, ec
	s.RSSSlopeKiBPerMin = slopePerMin(after, func(x SoakSample) float64 { return float64(x.RSS) / 1024 })
	s.CountSlopePerMin = slopePerMin(after, func(x SoakSample) float64 { return x.Count })
	span := after[len(after)-1].Seconds - after[0].Seconds
	s.Judged = span >= warmUp.Seconds()
	if !s.Judged {
		return
	}
	var what []string
	if er-wr > math.Max(soakRSSGrowth*wr, soakRSSGrowthAbs) && s.RSSSlopeKiBPerMin > 0 {
		what = append(what, fmt.Sprintf("RSS %s → %s", measure.MiB(int64(wr)), measure.MiB(int64(er))))
	}
	if ec-wc > math.Max(soakCountGrowth*wc, soakCountGrowthAbs) && s.CountSlopePerMin > 0 {
		what = append(what, fmt.Sprintf("%s %.0f → %.0f", s.CountKind, wc, ec))
	}
	if len(what) > 0 {
		s.Growing = true
		s.GrowingWhat = fmt.Sprint(what)
	}
}

// slopePerMin is the least-squares slope of f over xs, per minute.
func slopePerMin(xs []SoakSample, f func(SoakSample) float64) float64 {
	n := float64(len(xs))
	var st, sv, stt, stv float64
	for _, x := range xs {
		t, v := x.Seconds/60, f(x)
		st, sv, stt, stv = st+t, sv+v, stt+t*t, stv+t*v
	}
	d := n*stt - st*st
	if d == 0 {
		return 0
	}
	return (n*stv - st*sv) / d
}

// WriteSoakTable writes s as a table.
func WriteSoakTable(w io.Writer, s *SoakResult) {
	fmt.Fprintf(w, "\nsoak: %.0f s (warm-up %.0f s, a sample every %g s), %d proxies; %d proxy kills, %d broker restarts, %d clients arrived and left\n",
		s.DurationSeconds, s.WarmUpSeconds, s.SampleIntervalSeconds, s.Proxies, s.ProxyKills, s.BrokerRestarts, s.ClientsArrived)
	fmt.Fprintf(w, "downloads: %d, %d complete and intact (%.1f MB), %d failed\n", s.Downloads, s.DownloadsOK, float64(s.BytesOK)/1e6, s.DownloadsFailed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "process\tpid\tsamples\tRSS after warm-up\tRSS at end\tRSS slope KiB/min\tcount\tafter warm-up\tat end\tslope /min\tverdict\t")
	procs := slices.Clone(s.Processes)
	slices.SortStableFunc(procs, func(a, b *SoakSeries) int { return strings.Compare(a.Name, b.Name) })
	// Runs too short to judge (killed proxies) are summed up per name.
	short := map[string][2]int{} // runs, samples
	for _, p := range procs {
		if !p.Judged {
			v := short[p.Name]
			short[p.Name] = [2]int{v[0] + 1, v[1] + len(p.Samples)}
		}
	}
	for _, p := range procs {
		if !p.Judged {
			if v := short[p.Name]; v[0] > 0 {
				fmt.Fprintf(tw, "%s\t%d runs\t%d\t-\t-\t-\t%s\t-\t-\t-\ttoo short\t\n", p.Name, v[0], v[1], p.CountKind)
				delete(short, p.Name)
			}
			continue
		}
		verdict := "flat"
		if p.Growing {
			verdict = "GROWING"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%+.1f\t%s\t%.0f\t%.0f\t%+.2f\t%s\t\n", p.Name, p.PID, len(p.Samples), measure.MiB(p.WarmRSS), measure.MiB(p.EndRSS),
			p.RSSSlopeKiBPerMin, p.CountKind, p.WarmCount, p.EndCount, p.CountSlopePerMin, verdict)
	}
	tw.Flush()
	for _, g := range s.Growing {
		fmt.Fprintf(w, "growing: %s\n", g)
	}
	measure.WriteErrors(w, s.ErrorSamples)
}
