package relayload

import (
	"context"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// Defaults of the relay runs.
const (
	DefaultIdleCarriers       = 1000
	DefaultCarrierSettle      = 3 * time.Second
	DefaultThroughputCarriers = 4
	DefaultThroughputDuration = 10 * time.Second
	DefaultChunkSize          = 16 << 10
)

// Throughput modes: what the relay's forward target does with a stream.
const (
	// ModeEcho writes data and reads it back: the target echoes. The
	// figure is the bytes that made the whole round trip.
	ModeEcho = "echo"
	// ModeDownload only reads: the target is a source that writes as fast
	// as it can.
	ModeDownload = "download"
)

// RelayRun is what the relay's memory runs (RunRelayIdle,
// RunRelaySessions) share: the relay, how carriers are dialled and how the
// relay's memory is sampled.
type RelayRun struct {
	// URL is the relay's WebSocket URL, ws:// or wss://. Required.
	URL string
	// Settle is how long each step waits after its last carrier opened
	// before sampling memory. Default DefaultCarrierSettle. Keep the whole
	// run shorter than the relay's carrier idle timeout (Flurry: 2 min),
	// or set RelayIdleConfig.KeepAlive.
	Settle time.Duration
	// DialConcurrency bounds concurrent WebSocket handshakes. Default
	// DefaultDialConcurrency.
	DialConcurrency int
	// HandshakeTimeout bounds each WebSocket handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// PID, if positive, is the relay's process ID, for memory figures.
	PID int
	// SourcePrefix, if valid and the relay's address is an IPv4 address
	// inside it, makes the carriers come from its addresses in turn
	// (DefaultSourcePrefix: 127.0.0.0/8), so that more carriers than one
	// address has ephemeral ports can be opened.
	SourcePrefix netip.Prefix
	// Insecure skips TLS verification (self-signed test relays).
	Insecure bool
	// AllowNonLoopback allows a relay that is not on a loopback address.
	AllowNonLoopback bool
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// RelayIdleConfig configures RunRelayIdle. The zero value (with URL set)
// opens 1000 carriers.
type RelayIdleConfig struct {
	RelayRun
	// Carriers lists how many carriers to hold at each step (ascending;
	// carriers stay open from one step to the next). Default
	// {DefaultIdleCarriers}.
	Carriers []int
	// KeepAlive, if positive, sends a 1-byte padding chunk on every carrier
	// this often, so that a relay's idle timeout does not close them.
	KeepAlive time.Duration
}

// RelayIdleResult is the relay's memory per idle carrier.
type RelayIdleResult struct {
	URL              string        `json:"url"`
	RelayPID         int           `json:"relay_pid,omitempty"`
	BaselineRSSBytes int64         `json:"baseline_rss_bytes,omitempty"`
	SettleSeconds    float64       `json:"settle_seconds"`
	Steps            []CarrierStep `json:"steps"`
	// BytesPerCarrier is the last step's figure.
	BytesPerCarrier float64  `json:"bytes_per_carrier,omitempty"`
	DialErrors      int64    `json:"dial_errors"`
	ClosedByRelay   int64    `json:"closed_by_relay"`
	ErrorSamples    []string `json:"error_samples,omitempty"`
}

// CarrierStep is the relay's memory while Open carriers were idle.
type CarrierStep struct {
	Carriers        int     `json:"carriers"` // asked for
	Open            int64   `json:"open"`     // open when sampled
	RSSBytes        int64   `json:"rss_bytes,omitempty"`
	BytesPerCarrier float64 `json:"bytes_per_carrier,omitempty"` // (RSSBytes - baseline) / Open
	DialSeconds     float64 `json:"dial_seconds"`                // time to open this step's carriers
}

func (cfg RelayIdleConfig) withDefaults() (RelayIdleConfig, *url.URL, error) {
	cfg.Carriers = slices.Clone(cfg.Carriers)
	if len(cfg.Carriers) == 0 {
		cfg.Carriers = []int{DefaultIdleCarriers}
	}
	slices.Sort(cfg.Carriers)
	if cfg.Settle == 0 {
		cfg.Settle = DefaultCarrierSettle
	}
	if cfg.DialConcurrency == 0 {
		cfg.DialConcurrency = wscarrier.DefaultDialConcurrency
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = wscarrier.DefaultHandshakeTimeout
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "ws", "wss")
	if err != nil {
		return cfg, nil, err
	}
	switch {
	case len(cfg.Carriers) > measure.MaxSteps:
		return cfg, nil, fmt.Errorf("%w: at most %d steps", measure.ErrInvalidConfig, measure.MaxSteps)
	case cfg.Carriers[0] <= 0 || cfg.Carriers[len(cfg.Carriers)-1] > measure.MaxPeers:
		return cfg, nil, fmt.Errorf("%w: carriers out of range 1..%d", measure.ErrInvalidConfig, measure.MaxPeers)
	case cfg.Settle < 0 || cfg.KeepAlive < 0 || cfg.HandshakeTimeout < 0:
		return cfg, nil, fmt.Errorf("%w: negative duration", measure.ErrInvalidConfig)
	case cfg.DialConcurrency < 1 || cfg.DialConcurrency > 10_000:
		return cfg, nil, fmt.Errorf("%w: dial concurrency out of range 1..10000", measure.ErrInvalidConfig)
	}
	return cfg, u, nil
}

// dialer returns the WebSocket dialer of the run's carriers, from
// SourcePrefix's addresses when the relay is inside it.
func (r RelayRun) dialer(u *url.URL) (*websocket.Dialer, error) {
	var sources *wscarrier.SourceAddrs
	if r.SourcePrefix.IsValid() {
		if host, err := netip.ParseAddr(u.Hostname()); err == nil && host.Is4() && r.SourcePrefix.Contains(host) {
			if sources, err = wscarrier.NewSourceAddrs(r.SourcePrefix); err != nil {
				return nil, err
			}
		}
	}
	return wscarrier.NewWSDialer(r.Insecure, r.AllowNonLoopback, r.HandshakeTimeout, sources), nil
}

// RunRelayIdle opens idle carriers in steps and reports the relay's memory
// per carrier (given its PID). It closes every carrier before returning.
func RunRelayIdle(ctx context.Context, cfg RelayIdleConfig) (RelayIdleResult, error) {
	cfg, u, err := cfg.withDefaults()
	if err != nil {
		return RelayIdleResult{}, err
	}
	if _, err := measure.RaiseFileLimit(uint64(slices.Max(cfg.Carriers)) + 256); err != nil {
		return RelayIdleResult{}, err
	}
	proc := procstat.Watcher{PID: cfg.PID}
	res := RelayIdleResult{URL: u.String(), RelayPID: cfg.PID, SettleSeconds: measure.Seconds(cfg.Settle)}
	if res.BaselineRSSBytes, err = proc.BaselineRSS(); err != nil {
		return res, err
	}
	d, err := cfg.dialer(u)
	if err != nil {
		return res, err
	}
	ic := &idleCarriers{dialer: d, u: u}
	keepCtx, stopKeep := context.WithCancel(ctx)
	var keeper sync.WaitGroup
	if cfg.KeepAlive > 0 {
		keeper.Go(func() { ic.keepAlive(keepCtx, cfg.KeepAlive) })
	}
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		return fmt.Sprintf("relay idle: %d carriers open, %d dial errors, %d closed by relay",
			ic.open.Load(), ic.dialErrors.Load(), ic.closedByPeer.Load())
	})
	attempted := 0
	for _, k := range cfg.Carriers {
		measure.Say(cfg.Progress, "relay idle: opening carriers up to %d", k)
		start := time.Now()
		measure.RunPool(ctx, cfg.DialConcurrency, k-attempted, func() { ic.dialOne(ctx) })
		attempted = k
		step := CarrierStep{Carriers: k, DialSeconds: measure.Seconds(time.Since(start))}
		if !sleep.For(ctx, cfg.Settle) {
			break
		}
		if ic.sample(ctx, &step, proc, cfg.Settle, res.BaselineRSSBytes) {
			res.BytesPerCarrier = step.BytesPerCarrier
		}
		res.Steps = append(res.Steps, step)
		measure.Say(cfg.Progress, "relay idle: %d carriers open, relay RSS %s (%.0f bytes/carrier)", step.Open, measure.MiB(step.RSSBytes), step.BytesPerCarrier)
	}
	prog.Stop()
	stopKeep()
	keeper.Wait()
	ic.closeAll()
	res.DialErrors, res.ClosedByRelay = ic.dialErrors.Load(), ic.closedByPeer.Load()
	res.ErrorSamples = ic.errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Steps) > 0 && res.Steps[len(res.Steps)-1].Open == 0 {
		return res, fmt.Errorf("%w: no carrier stayed open (%v)", measure.ErrNoProgress, res.ErrorSamples)
	}
	return res, nil
}

// idleCarriers are the carriers of one RunRelayIdle call.
type idleCarriers struct {
	dialer *websocket.Dialer
	u      *url.URL

	errs                           measure.ErrorSamples
	mu                             sync.Mutex
	conns                          []*wscarrier.CarrierConn // guarded by mu
	open, dialErrors, closedByPeer atomic.Int64
	closing                        atomic.Bool
	readers                        sync.WaitGroup
}

// dialOne opens one carrier and drains it until it closes.
func (ic *idleCarriers) dialOne(ctx context.Context) {
	id := turbotunnel.NewClientID()
	ws, err := wscarrier.DialCarrier(ctx, ic.dialer, ic.u, id)
	if err != nil {
		if ctx.Err() == nil {
			ic.dialErrors.Add(1)
			ic.errs.Add("carrier: " + err.Error())
		}
		return
	}
	c := wscarrier.NewCarrierConn(ws, id)
	ic.mu.Lock()
	ic.conns = append(ic.conns, c)
	ic.mu.Unlock()
	ic.open.Add(1)
	ic.readers.Go(func() {
		// Nothing should arrive on an idle carrier; drain whatever does
		// and notice when the relay closes it.
		for {
			_, r, err := ws.NextReader()
			if err != nil {
				ic.open.Add(-1)
				if !ic.closing.Load() {
					ic.closedByPeer.Add(1)
					ic.errs.Add("carrier closed: " + err.Error())
				}
				return
			}
			_, _ = io.Copy(io.Discard, r)
		}
	})
}

// keepAlive sends a 1-byte padding chunk on every carrier every period
// until ctx ends.
func (ic *idleCarriers) keepAlive(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		ic.mu.Lock()
		list := slices.Clone(ic.conns)
		ic.mu.Unlock()
		for _, c := range list {
			_ = c.WS.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_ = c.WritePadding(1)
		}
	}
}

// sample fills in step's open carriers and the relay's memory: the
// medians of five samples over settle. It reports whether it computed the
// memory per carrier.
func (ic *idleCarriers) sample(ctx context.Context, step *CarrierStep, proc procstat.Watcher, settle time.Duration, baseline int64) bool {
	var rss, n []int64
	for range 5 {
		if s, ok, _ := proc.Sample(); ok {
			rss = append(rss, s.RSS)
		}
		n = append(n, ic.open.Load())
		sleep.For(ctx, measure.SampleGap(settle))
	}
	step.Open = measure.Median(n)
	if len(rss) == 0 {
		return false
	}
	step.RSSBytes = measure.Median(rss)
	if step.Open == 0 {
		return false
	}
	step.BytesPerCarrier = float64(step.RSSBytes-baseline) / float64(step.Open)
	return true
}

// closeAll closes every carrier and waits for their readers.
func (ic *idleCarriers) closeAll() {
	ic.closing.Store(true)
	ic.mu.Lock()
	for _, c := range ic.conns {
		c.Close()
	}
	ic.mu.Unlock()
	ic.readers.Wait()
}

// RelayThroughputConfig configures RunRelayThroughput. The zero value (with
// URL set) runs 4 carriers with one echo stream each for 10 s.
type RelayThroughputConfig struct {
	// URL is the relay's WebSocket URL, ws:// or wss://. Required.
	URL string
	// Carriers is the number of carriers, each its own KCP+smux session
	// (its own ClientID). Default DefaultThroughputCarriers.
	Carriers int
	// Streams is the number of smux streams per carrier. Default 1.
	Streams int
	// Duration is the measured time, after every stream has opened.
	// Default DefaultThroughputDuration.
	Duration time.Duration
	// Mode is ModeEcho (default: the relay's target echoes) or
	// ModeDownload (the target writes a stream).
	Mode string
	// ChunkSize is the size of each write. Default DefaultChunkSize.
	ChunkSize int
	// HandshakeTimeout bounds each WebSocket handshake and stream open.
	// Default DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// PID, if positive, is the relay's process ID, for RSS and CPU.
	PID int
	// Insecure skips TLS verification (self-signed test relays).
	Insecure bool
	// AllowNonLoopback allows a relay that is not on a loopback address.
	AllowNonLoopback bool
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// ThroughputResult is a throughput run through a relay.
type ThroughputResult struct {
	URL            string  `json:"url"`
	Mode           string  `json:"mode"`
	Carriers       int     `json:"carriers"`
	Streams        int     `json:"streams_per_carrier"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// BytesSent and BytesReceived are counted over the measured window.
	BytesSent     int64 `json:"bytes_sent"`
	BytesReceived int64 `json:"bytes_received"`
	// MBPerSec is BytesReceived per second, in MB (10^6 bytes): for echo,
	// data that made the whole round trip.
	MBPerSec float64 `json:"mb_per_sec"`
	// TTFB is the time from opening a stream to its first byte back.
	TTFB             measure.Percentiles `json:"ttfb"`
	StreamErrors     int64               `json:"stream_errors"`
	RelayRSSBytes    int64               `json:"relay_rss_bytes,omitempty"`
	RelayCPUPercent  float64             `json:"relay_cpu_percent,omitempty"`
	ErrorSamples     []string            `json:"error_samples,omitempty"`
	StreamsConnected int                 `json:"streams_connected"`
}

func (cfg RelayThroughputConfig) withDefaults() (RelayThroughputConfig, *url.URL, error) {
	if cfg.Carriers == 0 {
		cfg.Carriers = DefaultThroughputCarriers
	}
	if cfg.Streams == 0 {
		cfg.Streams = 1
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultThroughputDuration
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeEcho
	}
	if cfg.ChunkSize == 0 {
		cfg.ChunkSize = DefaultChunkSize
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = wscarrier.DefaultHandshakeTimeout
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "ws", "wss")
	if err != nil {
		return cfg, nil, err
	}
	switch {
	case cfg.Carriers < 0 || cfg.Carriers > 10_000:
		return cfg, nil, fmt.Errorf("%w: carriers out of range 1..10000", measure.ErrInvalidConfig)
	case cfg.Streams < 0 || cfg.Streams > 1000:
		return cfg, nil, fmt.Errorf("%w: streams out of range 1..1000", measure.ErrInvalidConfig)
	case cfg.Duration < 0 || cfg.HandshakeTimeout < 0:
		return cfg, nil, fmt.Errorf("%w: negative duration", measure.ErrInvalidConfig)
	case cfg.Mode != ModeEcho && cfg.Mode != ModeDownload:
		return cfg, nil, fmt.Errorf("%w: mode %q (want %s or %s)", measure.ErrInvalidConfig, cfg.Mode, ModeEcho, ModeDownload)
	case cfg.ChunkSize < 1 || cfg.ChunkSize > 1<<20:
		return cfg, nil, fmt.Errorf("%w: chunk size out of range 1..1048576", measure.ErrInvalidConfig)
	}
	return cfg, u, nil
}

// throughputRun is the state of one RunRelayThroughput call.
type throughputRun struct {
	cfg    RelayThroughputConfig
	errs   measure.ErrorSamples
	failed atomic.Int64 // stream errors

	sent, received atomic.Int64 // by every stream
	ttfb           *measure.Recorder
	stop           atomic.Bool // set once the window is over
	workers        sync.WaitGroup
}

// RunRelayThroughput opens cfg.Carriers carriers through the relay, runs
// cfg.Streams streams on each for cfg.Duration, and reports the aggregate
// rate. The relay must forward to an echo target (ModeEcho) or a source
// (ModeDownload); tcptarget.Start serves both.
func RunRelayThroughput(ctx context.Context, cfg RelayThroughputConfig) (ThroughputResult, error) {
	cfg, u, err := cfg.withDefaults()
	if err != nil {
		return ThroughputResult{}, err
	}
	if _, err := measure.RaiseFileLimit(uint64(cfg.Carriers) + 256); err != nil {
		return ThroughputResult{}, err
	}
	res := ThroughputResult{URL: u.String(), Mode: cfg.Mode, Carriers: cfg.Carriers, Streams: cfg.Streams}
	proc := procstat.Watcher{PID: cfg.PID}
	if _, _, err := proc.Sample(); err != nil {
		return res, err
	}
	r := &throughputRun{cfg: cfg, ttfb: measure.NewRecorder()}
	// Open every carrier and stream first, so that the measured window is
	// all data.
	set := r.open(ctx, u)
	streams, opened := set.Streams, set.Opened // no more writers
	res.StreamsConnected = len(streams)
	if len(streams) == 0 {
		set.CloseAll()
		res.StreamErrors = r.failed.Load()
		res.ErrorSamples = r.errs.Get()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		return res, fmt.Errorf("%w: no stream opened (%v)", measure.ErrNoProgress, res.ErrorSamples)
	}
	r.startStreams(streams, opened)
	before, haveBefore, _ := proc.Sample()
	start := time.Now()
	sent0, recv0 := r.sent.Load(), r.received.Load()
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		el := time.Since(start)
		return fmt.Sprintf("relay throughput: %.0fs/%v, %d streams, %.2f MB/s received, %d errors",
			el.Seconds(), cfg.Duration, len(streams), float64(r.received.Load()-recv0)/1e6/el.Seconds(), r.failed.Load())
	})
	sleep.For(ctx, cfg.Duration)
	elapsed := time.Since(start)
	sent1, recv1 := r.sent.Load(), r.received.Load()
	after, haveAfter, _ := proc.Sample()
	prog.Stop()
	r.stop.Store(true)
	set.CloseAll()
	r.workers.Wait()

	res.ElapsedSeconds = measure.Seconds(elapsed)
	res.BytesSent, res.BytesReceived = sent1-sent0, recv1-recv0
	res.MBPerSec = float64(int64(float64(res.BytesReceived)/1e6/elapsed.Seconds()*1000)) / 1000
	res.TTFB = r.ttfb.Percentiles()
	res.StreamErrors = r.failed.Load()
	res.ErrorSamples = r.errs.Get()
	if haveBefore && haveAfter {
		res.RelayRSSBytes = after.RSS
		res.RelayCPUPercent = procstat.CPUPercent(before, after)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.BytesReceived == 0 {
		return res, fmt.Errorf("%w: no byte came back (%v)", measure.ErrNoProgress, res.ErrorSamples)
	}
	return res, nil
}

// open opens the carriers and their streams, within HandshakeTimeout
// and 5 s more.
func (r *throughputRun) open(ctx context.Context, u *url.URL) *wscarrier.TunnelSet {
	cfg := r.cfg
	d := wscarrier.NewWSDialer(cfg.Insecure, cfg.AllowNonLoopback, cfg.HandshakeTimeout, nil)
	setupCtx, cancelSetup := context.WithTimeout(ctx, cfg.HandshakeTimeout+5*time.Second)
	defer cancelSetup()
	var (
		set   wscarrier.TunnelSet
		setup sync.WaitGroup
	)
	for range cfg.Carriers {
		setup.Go(func() {
			t, err := wscarrier.OpenTunnel(setupCtx, d, u)
			if err != nil {
				r.failed.Add(int64(cfg.Streams))
				r.errs.Add("carrier: " + err.Error())
				return
			}
			set.AddTunnel(t)
			for range cfg.Streams {
				st, err := t.Mux.OpenStream()
				if err != nil {
					r.failed.Add(1)
					r.errs.Add("open stream: " + err.Error())
					continue
				}
				set.AddStream(st)
			}
		})
	}
	setup.Wait()
	return &set
}

// startStreams starts a reader on every stream and, in echo mode, a
// writer; they run until stop is set and the streams close.
func (r *throughputRun) startStreams(streams []*smux.Stream, opened []time.Time) {
	chunk := make([]byte, r.cfg.ChunkSize)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for i, st := range streams {
		start := opened[i]
		r.workers.Go(func() { r.read(st, start) })
		if r.cfg.Mode == ModeEcho {
			r.workers.Go(func() { r.write(st, chunk) })
		}
	}
}

// read counts what comes back on st and its time to first byte.
func (r *throughputRun) read(st *smux.Stream, start time.Time) {
	buf := make([]byte, 32<<10)
	first := true
	for {
		n, err := st.Read(buf)
		if n > 0 {
			r.received.Add(int64(n))
			if first {
				r.ttfb.Add(time.Since(start))
				first = false
			}
		}
		if err != nil {
			if !r.stop.Load() {
				r.failed.Add(1)
				r.errs.Add("stream read: " + err.Error())
			}
			return
		}
	}
}

// write sends chunk on st until stop is set.
func (r *throughputRun) write(st *smux.Stream, chunk []byte) {
	for !r.stop.Load() {
		n, err := st.Write(chunk)
		r.sent.Add(int64(n))
		if err != nil {
			if !r.stop.Load() {
				r.failed.Add(1)
				r.errs.Add("stream write: " + err.Error())
			}
			return
		}
	}
}

// WriteTable writes ri as a readable table.
func (ri RelayIdleResult) WriteTable(w io.Writer) {
	t := measure.NewTable(w)
	t.Title(fmt.Sprintf("relay %s: memory per idle carrier (baseline RSS %s)", ri.URL, measure.MiBOrDash(ri.BaselineRSSBytes)))
	t.Line("carriers", "open", "relay RSS", "per carrier", "dial s")
	for _, s := range ri.Steps {
		t.Line(s.Carriers, s.Open, measure.MiBOrDash(s.RSSBytes), measure.KiB(s.BytesPerCarrier), fmt.Sprintf("%.1f", s.DialSeconds))
	}
	t.Flush()
	fmt.Fprintf(w, "dial errors: %d, closed by relay: %d\n", ri.DialErrors, ri.ClosedByRelay)
	measure.WriteErrors(w, ri.ErrorSamples)
}

// Plots returns the chart of memory against idle carriers, given the
// relay's PID.
func (ri RelayIdleResult) Plots() []measure.Plot {
	if ri.BaselineRSSBytes <= 0 || len(ri.Steps) == 0 {
		return nil
	}
	s := measure.Series{Name: "relay RSS", Points: [][2]float64{{0, float64(ri.BaselineRSSBytes) / (1 << 20)}}}
	for _, st := range ri.Steps {
		s.Points = append(s.Points, [2]float64{float64(st.Open), float64(st.RSSBytes) / (1 << 20)})
	}
	return []measure.Plot{{Title: "Relay memory against idle carriers", XLabel: "open carriers", YLabel: "RSS (MiB)", Series: []measure.Series{s}}}
}

// WriteTable writes t as a readable table.
func (tp ThroughputResult) WriteTable(w io.Writer) {
	t := measure.NewTable(w)
	t.Title(fmt.Sprintf("relay %s: throughput (%s)", tp.URL, tp.Mode))
	t.Line("carriers", "streams", "seconds", "MB received", "MB/s", "TTFB p50 ms", "TTFB p99 ms", "errors", "relay RSS", "relay CPU")
	t.Line(tp.Carriers, tp.StreamsConnected, fmt.Sprintf("%.1f", tp.ElapsedSeconds), fmt.Sprintf("%.1f", float64(tp.BytesReceived)/1e6),
		fmt.Sprintf("%.2f", tp.MBPerSec), fmt.Sprintf("%.1f", tp.TTFB.P50Ms), fmt.Sprintf("%.1f", tp.TTFB.P99Ms), tp.StreamErrors,
		measure.MiBOrDash(tp.RelayRSSBytes), measure.CPUOrDash(tp.RelayCPUPercent))
	t.Flush()
	measure.WriteErrors(w, tp.ErrorSamples)
}
