package chainload

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"time"

	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/socks5"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// Defaults of SideBySideConfig.
const (
	DefaultSideBySideDownloads = 6
	DefaultSideBySideBytes     = 50 << 20
	DefaultPauseThreshold      = 200 * time.Millisecond
	DefaultSideBySidePoll      = 2 * time.Second // Snowflake's proxy minimum
)

// SideBySideConfig configures RunSideBySide.
type SideBySideConfig struct {
	// Implementations are measured in turn, one download each, in an
	// order that alternates from round to round. At least one.
	Implementations []chainproc.Implementation
	// Downloads per implementation. Default DefaultSideBySideDownloads.
	Downloads int
	// Bytes per download. Default DefaultSideBySideBytes.
	Bytes int64
	// PauseThreshold: a gap between two reads longer than this, after the
	// first byte, counts as a pause. Default DefaultPauseThreshold.
	PauseThreshold time.Duration
	// PollInterval is the proxies' -poll-interval. Default
	// DefaultSideBySidePoll.
	PollInterval time.Duration
	// RequestTimeout bounds each download, rendezvous included. Default
	// DefaultChainRequestTimeout.
	RequestTimeout time.Duration
	// Dir receives each chain's logs and state. Required.
	Dir string
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// Download is one download through one implementation's chain.
type Download struct {
	Implementation string  `json:"implementation"`
	OK             bool    `json:"ok"`
	Error          string  `json:"error,omitempty"`
	Bytes          int64   `json:"bytes"`
	TTFBSeconds    float64 `json:"ttfb_seconds"`
	// MBPerSec is from the first to the last byte (MB = 10^6 bytes).
	MBPerSec float64 `json:"mb_per_sec"`
	// Pauses counts gaps between reads longer than the threshold;
	// MaxGapSeconds is the longest gap after the first byte.
	Pauses        int     `json:"pauses"`
	MaxGapSeconds float64 `json:"max_gap_seconds"`
	// CPUMsPerMB per role, from SOCKS connect to the last byte.
	CPUMsPerMB map[string]float64 `json:"cpu_ms_per_mb"`
	// RcvbufErrors is the growth of Udp RcvbufErrors in /proc/net/snmp
	// (this network namespace) over the download.
	RcvbufErrors int64 `json:"rcvbuf_errors"`
	// UDPSendsPerMB is the growth of Udp OutDatagrams (every UDP send in
	// this network namespace, data and acknowledgements both ways) per MB
	// downloaded: what each send's fixed cost is paid on. The kernel counts
	// a GSO send once, although it leaves as several datagrams.
	UDPSendsPerMB float64 `json:"udp_sends_per_mb"`
}

// SideBySideSummary is one implementation's medians.
type SideBySideSummary struct {
	Implementation string  `json:"implementation"`
	OK             int     `json:"ok"`
	Failed         int     `json:"failed"`
	MBPerSec       float64 `json:"mb_per_sec"` // median
	MBPerSecMin    float64 `json:"mb_per_sec_min"`
	MBPerSecMax    float64 `json:"mb_per_sec_max"`
	TTFBSeconds    float64 `json:"ttfb_seconds"` // median
	// CPUMsPerMB per role and "total" (client + proxy + server), medians.
	CPUMsPerMB map[string]float64 `json:"cpu_ms_per_mb"`
	// PeakRSS per role (VmHWM at the end of the run), bytes.
	PeakRSS map[string]int64 `json:"peak_rss"`
	// Pauses over the threshold in all downloads, and how many downloads
	// had at least one.
	Pauses, DownloadsWithPauses int
	MaxGapSeconds               float64 `json:"max_gap_seconds"`
	RcvbufErrors                int64   `json:"rcvbuf_errors"`    // total
	UDPSendsPerMB               float64 `json:"udp_sends_per_mb"` // median
}

// SideBySideResult is what RunSideBySide measured.
type SideBySideResult struct {
	Bytes                 int64               `json:"bytes"`
	PauseThresholdSeconds float64             `json:"pause_threshold_seconds"`
	Downloads             []Download          `json:"downloads"`
	Summaries             []SideBySideSummary `json:"summaries"`
}

// errNotIsolated is returned when a side-by-side run is started in a
// network namespace with interfaces other than loopback.
var errNotIsolated = errors.New("side-by-side runs need a network namespace with loopback only (run under `unshare -n`)")

// onlyLoopback reports whether every interface that is up is a loopback
// interface. Snowflake's proxy and client gather WebRTC candidates on every
// interface and default to public STUN and NAT-probe servers; in such a
// namespace nothing can leave the machine.
func onlyLoopback() (bool, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return false, err
	}
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagUp != 0 && ifi.Flags&net.FlagLoopback == 0 {
			return false, nil
		}
	}
	return true, nil
}

func (cfg SideBySideConfig) withDefaults() (SideBySideConfig, error) {
	if len(cfg.Implementations) == 0 {
		return cfg, fmt.Errorf("%w: no implementation", measure.ErrInvalidConfig)
	}
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: no work directory", measure.ErrInvalidConfig)
	}
	if cfg.Downloads == 0 {
		cfg.Downloads = DefaultSideBySideDownloads
	}
	if cfg.Bytes == 0 {
		cfg.Bytes = DefaultSideBySideBytes
	}
	if cfg.PauseThreshold == 0 {
		cfg.PauseThreshold = DefaultPauseThreshold
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultSideBySidePoll
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultChainRequestTimeout
	}
	if cfg.Downloads < 0 || cfg.Bytes < 0 || cfg.Bytes > maxChainBytes {
		return cfg, fmt.Errorf("%w: downloads and bytes must be positive", measure.ErrInvalidConfig)
	}
	if err := chainproc.DistinctNames(cfg.Implementations); err != nil {
		return cfg, err
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	return cfg, nil
}

// RunSideBySide starts one chain per implementation (source target, server,
// broker, one proxy, client, each a process on loopback) and downloads
// cfg.Bytes through each in turn, cfg.Downloads times, alternating the
// order every round so that neither gets the quieter moments of a loaded
// machine. It must run in a network namespace whose only interface is
// loopback.
func RunSideBySide(ctx context.Context, cfg SideBySideConfig) (SideBySideResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return SideBySideResult{}, err
	}
	if ok, err := onlyLoopback(); err != nil || !ok {
		return SideBySideResult{}, errors.Join(errNotIsolated, err)
	}
	res := SideBySideResult{Bytes: cfg.Bytes, PauseThresholdSeconds: cfg.PauseThreshold.Seconds()}
	chains := make([]*chainproc.Chain, 0, len(cfg.Implementations))
	defer func() {
		for _, c := range chains {
			c.Stop()
		}
	}()
	for _, im := range cfg.Implementations {
		measure.Say(cfg.Progress, "starting %s's chain", im.Name)
		c, err := chainproc.StartChain(ctx, chainproc.ChainOptions{Dir: filepath.Join(cfg.Dir, im.Name), PollInterval: cfg.PollInterval, TargetMode: tcptarget.Source}, im)
		if c != nil {
			chains = append(chains, c)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", im.Name, err)
		}
	}
	// A first small download per chain, not counted: the proxy's first
	// poll and the client's first rendezvous retries are start-up, not
	// the data path.
	for _, c := range chains {
		if err := warmUp(ctx, c, cfg); err != nil {
			return res, fmt.Errorf("%s: warm-up: %w", c.Implementation.Name, err)
		}
	}
	for round := range cfg.Downloads {
		order := slices.Clone(chains)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			d := download(ctx, c, cfg)
			measure.Say(cfg.Progress, "%s download %d/%d: ok=%v %.1f MB/s, %d pauses, %d UDP drops %s",
				c.Implementation.Name, round+1, cfg.Downloads, d.OK, d.MBPerSec, d.Pauses, d.RcvbufErrors, d.Error)
			res.Downloads = append(res.Downloads, d)
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}
	for _, c := range chains {
		res.Summaries = append(res.Summaries, summarizeSideBySide(c, res.Downloads))
	}
	return res, nil
}

// warmUpBytes is the size of the uncounted first download.
const warmUpBytes = 1 << 20

// warmUp downloads warmUpBytes through c, trying up to three times.
func warmUp(ctx context.Context, c *chainproc.Chain, cfg SideBySideConfig) error {
	wcfg := cfg
	wcfg.Bytes = warmUpBytes
	var d Download
	for range 3 {
		if d = download(ctx, c, wcfg); d.OK {
			measure.Say(cfg.Progress, "%s: warm-up download done", c.Implementation.Name)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return errors.New(d.Error)
}

// download reads cfg.Bytes through c's client.
func download(ctx context.Context, c *chainproc.Chain, cfg SideBySideConfig) Download {
	d := Download{Implementation: c.Implementation.Name, CPUMsPerMB: map[string]float64{}}
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	drops0, _ := procstat.UDPCounter("RcvbufErrors")
	sent0, _ := procstat.UDPCounter("OutDatagrams")
	cpu0 := c.CPUTimes()
	start := time.Now()
	dialer := &socks5.Dialer{Proxy: c.SOCKSAddr, Dialer: measure.NewDialer(false)}
	conn, err := dialer.DialContext(ctx, "tcp", c.Target.Addr())
	if err != nil {
		d.Error = err.Error()
		return d
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	buf := make([]byte, 64<<10)
	var first, last time.Time
	var maxGap time.Duration
	for d.Bytes < cfg.Bytes {
		n, err := conn.Read(buf[:min(int64(len(buf)), cfg.Bytes-d.Bytes)])
		now := time.Now()
		if n > 0 {
			if first.IsZero() {
				first = now
			} else if gap := now.Sub(last); gap > cfg.PauseThreshold {
				d.Pauses++
				maxGap = max(maxGap, gap)
			} else {
				maxGap = max(maxGap, gap)
			}
			last = now
			d.Bytes += int64(n)
		}
		if err != nil {
			d.Error = err.Error()
			break
		}
	}
	cpu1 := c.CPUTimes()
	drops1, _ := procstat.UDPCounter("RcvbufErrors")
	sent1, _ := procstat.UDPCounter("OutDatagrams")
	d.RcvbufErrors = drops1 - drops0
	d.MaxGapSeconds = measure.Seconds(maxGap)
	if !first.IsZero() {
		d.TTFBSeconds = measure.Seconds(first.Sub(start))
		if el := last.Sub(first); el > 0 {
			d.MBPerSec = float64(d.Bytes) / 1e6 / el.Seconds()
		}
	}
	mb := float64(d.Bytes) / 1e6
	if mb > 0 {
		d.UDPSendsPerMB = float64(sent1-sent0) / mb
		for role, t := range cpu1 {
			d.CPUMsPerMB[role] = float64(t-cpu0[role]) / 1e6 / mb
		}
	}
	d.OK = d.Bytes == cfg.Bytes
	if d.OK {
		d.Error = ""
	}
	return d
}

func summarizeSideBySide(c *chainproc.Chain, all []Download) SideBySideSummary {
	s := SideBySideSummary{Implementation: c.Implementation.Name, CPUMsPerMB: map[string]float64{}, PeakRSS: map[string]int64{}}
	var rates, ttfb, sends []float64
	cpu := map[string][]float64{}
	for _, d := range all {
		if d.Implementation != c.Implementation.Name {
			continue
		}
		if !d.OK {
			s.Failed++
			continue
		}
		s.OK++
		rates = append(rates, d.MBPerSec)
		ttfb = append(ttfb, d.TTFBSeconds)
		sends = append(sends, d.UDPSendsPerMB)
		total := 0.0
		for _, r := range []string{chainproc.RoleClient, chainproc.RoleProxy, chainproc.RoleServer} {
			cpu[r] = append(cpu[r], d.CPUMsPerMB[r])
			total += d.CPUMsPerMB[r]
		}
		cpu[chainproc.RoleBroker] = append(cpu[chainproc.RoleBroker], d.CPUMsPerMB[chainproc.RoleBroker])
		cpu["total"] = append(cpu["total"], total)
		s.Pauses += d.Pauses
		if d.Pauses > 0 {
			s.DownloadsWithPauses++
		}
		s.MaxGapSeconds = max(s.MaxGapSeconds, d.MaxGapSeconds)
		s.RcvbufErrors += d.RcvbufErrors
	}
	s.MBPerSec, s.TTFBSeconds = measure.MedianFloat(rates), measure.MedianFloat(ttfb)
	s.UDPSendsPerMB = measure.MedianFloat(sends)
	if len(rates) > 0 {
		s.MBPerSecMin, s.MBPerSecMax = slices.Min(rates), slices.Max(rates)
	}
	for r, xs := range cpu {
		s.CPUMsPerMB[r] = measure.MedianFloat(xs)
	}
	for role, p := range c.Procs {
		if ps, err := procstat.ReadProc(p.PID()); err == nil {
			s.PeakRSS[role] = ps.HWM
		}
	}
	return s
}

// WriteSideBySideTable prints the summaries side by side, with each
// implementation's ratio to the first.
func WriteSideBySideTable(w io.Writer, r SideBySideResult) error {
	if len(r.Summaries) == 0 {
		_, err := fmt.Fprintln(w, "no results")
		return err
	}
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "per %.1f MB download (medians; ratio to %s)\n", float64(r.Bytes)/1e6, r.Summaries[0].Implementation)
	fmt.Fprintf(bw, "%-34s", "")
	for _, s := range r.Summaries {
		fmt.Fprintf(bw, " %22s", s.Implementation)
	}
	fmt.Fprintln(bw)
	base := r.Summaries[0]
	row := func(label string, val func(SideBySideSummary) float64, format string, ratio bool) {
		fmt.Fprintf(bw, "%-34s", label)
		for _, s := range r.Summaries {
			cell := fmt.Sprintf(format, val(s))
			if ratio && s.Implementation != base.Implementation && val(base) != 0 {
				cell += fmt.Sprintf(" (%.2fx)", val(s)/val(base))
			}
			fmt.Fprintf(bw, " %22s", cell)
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintf(bw, "%-34s", "downloads ok / failed")
	for _, s := range r.Summaries {
		fmt.Fprintf(bw, " %22s", fmt.Sprintf("%d / %d", s.OK, s.Failed))
	}
	fmt.Fprintln(bw)
	row("MB/s, first to last byte", func(s SideBySideSummary) float64 { return s.MBPerSec }, "%.1f", true)
	fmt.Fprintf(bw, "%-34s", "MB/s range")
	for _, s := range r.Summaries {
		fmt.Fprintf(bw, " %22s", fmt.Sprintf("%.1f-%.1f", s.MBPerSecMin, s.MBPerSecMax))
	}
	fmt.Fprintln(bw)
	for _, role := range []string{"total", chainproc.RoleClient, chainproc.RoleProxy, chainproc.RoleServer, chainproc.RoleBroker} {
		row("CPU ms per MB, "+role, func(s SideBySideSummary) float64 { return s.CPUMsPerMB[role] }, "%.1f", role != chainproc.RoleBroker)
	}
	for _, role := range chainproc.Roles {
		row("peak RSS MiB, "+role, func(s SideBySideSummary) float64 { return float64(s.PeakRSS[role]) / (1 << 20) }, "%.1f", false)
	}
	fmt.Fprintf(bw, "%-34s", fmt.Sprintf("pauses > %v (downloads with one)", time.Duration(r.PauseThresholdSeconds*float64(time.Second))))
	for _, s := range r.Summaries {
		fmt.Fprintf(bw, " %22s", fmt.Sprintf("%d (%d)", s.Pauses, s.DownloadsWithPauses))
	}
	fmt.Fprintln(bw)
	row("longest gap, s", func(s SideBySideSummary) float64 { return s.MaxGapSeconds }, "%.3f", false)
	row("UDP sends per MB", func(s SideBySideSummary) float64 { return s.UDPSendsPerMB }, "%.0f", true)
	row("UDP RcvbufErrors, all downloads", func(s SideBySideSummary) float64 { return float64(s.RcvbufErrors) }, "%.0f", false)
	row("time to first byte, s", func(s SideBySideSummary) float64 { return s.TTFBSeconds }, "%.3f", false)
	return bw.Flush()
}
