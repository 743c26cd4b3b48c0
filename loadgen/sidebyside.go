package loadgen

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Chain roles, in the order a side-by-side run starts them.
const (
	RoleServer = "server"
	RoleBroker = "broker"
	RoleProxy  = "proxy"
	RoleClient = "client"
)

// Roles are the four processes of a chain.
var Roles = []string{RoleClient, RoleProxy, RoleServer, RoleBroker}

// Defaults of SideBySideConfig.
const (
	DefaultSideBySideDownloads = 6
	DefaultSideBySideBytes     = 50 << 20
	DefaultPauseThreshold      = 200 * time.Millisecond
	DefaultSideBySidePoll      = 2 * time.Second // Snowflake's proxy minimum
)

// Implementation names the four binaries of one implementation of the
// chain. Each is run with Snowflake v2.14.1's flag names and pluggable
// transport environment, so any implementation that accepts those runs.
type Implementation struct {
	Name                          string
	Broker, Proxy, Client, Server string
}

// ImplementationFromPrefix finds PREFIX-broker, -proxy, -client and
// -server (or -relay, Flurry's name for it).
func ImplementationFromPrefix(name, prefix string) (Implementation, error) {
	im, err := ServerFromPrefix(name, prefix)
	if err != nil {
		return im, err
	}
	if im.Broker, err = findRole(prefix, "broker"); err != nil {
		return im, err
	}
	if im.Proxy, err = findRole(prefix, "proxy"); err != nil {
		return im, err
	}
	if im.Client, err = findRole(prefix, "client"); err != nil {
		return im, err
	}
	return im, nil
}

// ServerFromPrefix is an implementation of which only the server matters
// (RunRelayUsers): PREFIXserver or PREFIXrelay.
func ServerFromPrefix(name, prefix string) (Implementation, error) {
	im := Implementation{Name: name}
	var err error
	im.Server, err = findRole(prefix, "server", "relay")
	return im, err
}

// findRole returns the first of PREFIXrole that is an executable file.
func findRole(prefix string, roles ...string) (string, error) {
	for _, r := range roles {
		p := prefix + r
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no executable %s%s", ErrInvalidConfig, prefix, roles[0])
}

// SideBySideConfig configures RunSideBySide.
type SideBySideConfig struct {
	// Implementations are measured in turn, one download each, in an
	// order that alternates from round to round. At least one.
	Implementations []Implementation
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
		return cfg, fmt.Errorf("%w: no implementation", ErrInvalidConfig)
	}
	if cfg.Dir == "" {
		return cfg, fmt.Errorf("%w: no work directory", ErrInvalidConfig)
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
		return cfg, fmt.Errorf("%w: downloads and bytes must be positive", ErrInvalidConfig)
	}
	if err := distinctNames(cfg.Implementations); err != nil {
		return cfg, err
	}
	cfg.Progress = lockWriter(cfg.Progress)
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
	chains := make([]*sbsChain, 0, len(cfg.Implementations))
	defer func() {
		for _, c := range chains {
			c.stop()
		}
	}()
	for _, im := range cfg.Implementations {
		say(cfg.Progress, "starting %s's chain", im.Name)
		c, err := startChain(ctx, chainOptions{Dir: filepath.Join(cfg.Dir, im.Name), PollInterval: cfg.PollInterval, TargetMode: TargetSource}, im)
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
		if err := c.warmUp(ctx, cfg); err != nil {
			return res, fmt.Errorf("%s: warm-up: %w", c.im.Name, err)
		}
	}
	for round := range cfg.Downloads {
		order := slices.Clone(chains)
		if round%2 == 1 {
			slices.Reverse(order)
		}
		for _, c := range order {
			d := c.download(ctx, cfg)
			say(cfg.Progress, "%s download %d/%d: ok=%v %.1f MB/s, %d pauses, %d UDP drops %s",
				c.im.Name, round+1, cfg.Downloads, d.OK, d.MBPerSec, d.Pauses, d.RcvbufErrors, d.Error)
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
func (c *sbsChain) warmUp(ctx context.Context, cfg SideBySideConfig) error {
	wcfg := cfg
	wcfg.Bytes = warmUpBytes
	var d Download
	for range 3 {
		if d = c.download(ctx, wcfg); d.OK {
			say(cfg.Progress, "%s: warm-up download done", c.im.Name)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return errors.New(d.Error)
}

// download reads cfg.Bytes through c's client.
func (c *sbsChain) download(ctx context.Context, cfg SideBySideConfig) Download {
	d := Download{Implementation: c.im.Name, CPUMsPerMB: map[string]float64{}}
	ctx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	drops0, _ := udpCounter("RcvbufErrors")
	sent0, _ := udpCounter("OutDatagrams")
	cpu0 := c.cpuTimes()
	start := time.Now()
	dialer := &socksDialer{proxy: c.socks, dialer: newDialer(false)}
	conn, err := dialer.DialContext(ctx, "tcp", c.target.Addr())
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
	cpu1 := c.cpuTimes()
	drops1, _ := udpCounter("RcvbufErrors")
	sent1, _ := udpCounter("OutDatagrams")
	d.RcvbufErrors = drops1 - drops0
	d.MaxGapSeconds = seconds(maxGap)
	if !first.IsZero() {
		d.TTFBSeconds = seconds(first.Sub(start))
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

// udpCounter reads the Udp counter called name from /proc/net/snmp.
func udpCounter(name string) (int64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	return parseUDPCounter(string(b), name)
}

// parseUDPCounter finds the counter called name in the two "Udp:" lines of
// /proc/net/snmp (names, then values).
func parseUDPCounter(snmp, name string) (int64, error) {
	var names []string
	for line := range strings.Lines(snmp) {
		rest, ok := strings.CutPrefix(line, "Udp: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, name); i >= 0 && i < len(f) {
			var v int64
			if _, err := fmt.Sscan(f[i], &v); err != nil {
				return 0, err
			}
			return v, nil
		}
		break
	}
	return 0, fmt.Errorf("no Udp %s in /proc/net/snmp", name)
}

func medianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func summarizeSideBySide(c *sbsChain, all []Download) SideBySideSummary {
	s := SideBySideSummary{Implementation: c.im.Name, CPUMsPerMB: map[string]float64{}, PeakRSS: map[string]int64{}}
	var rates, ttfb, sends []float64
	cpu := map[string][]float64{}
	for _, d := range all {
		if d.Implementation != c.im.Name {
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
		for _, r := range []string{RoleClient, RoleProxy, RoleServer} {
			cpu[r] = append(cpu[r], d.CPUMsPerMB[r])
			total += d.CPUMsPerMB[r]
		}
		cpu[RoleBroker] = append(cpu[RoleBroker], d.CPUMsPerMB[RoleBroker])
		cpu["total"] = append(cpu["total"], total)
		s.Pauses += d.Pauses
		if d.Pauses > 0 {
			s.DownloadsWithPauses++
		}
		s.MaxGapSeconds = max(s.MaxGapSeconds, d.MaxGapSeconds)
		s.RcvbufErrors += d.RcvbufErrors
	}
	s.MBPerSec, s.TTFBSeconds = medianFloat(rates), medianFloat(ttfb)
	s.UDPSendsPerMB = medianFloat(sends)
	if len(rates) > 0 {
		s.MBPerSecMin, s.MBPerSecMax = slices.Min(rates), slices.Max(rates)
	}
	for r, xs := range cpu {
		s.CPUMsPerMB[r] = medianFloat(xs)
	}
	for role, p := range c.procs {
		if ps, err := ReadProc(p.PID()); err == nil {
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
	for _, role := range []string{"total", RoleClient, RoleProxy, RoleServer, RoleBroker} {
		row("CPU ms per MB, "+role, func(s SideBySideSummary) float64 { return s.CPUMsPerMB[role] }, "%.1f", role != RoleBroker)
	}
	for _, role := range Roles {
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
