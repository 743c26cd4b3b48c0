package relayload

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/procstat"
	"github.com/gorilla/websocket"
)

// RelaySessionsConfig configures RunRelaySessions: turbotunnel sessions
// (each its own ClientID, carrier, KCP and smux session) held open in
// steps, to measure the relay's memory per session.
type RelaySessionsConfig struct {
	// RelayRun's URL is the relay's; its target must echo.
	RelayRun
	// Sessions lists how many sessions to hold at each step (ascending;
	// sessions stay open from one step to the next).
	Sessions []int
	// Active keeps one stream per session open (the relay then holds the
	// stream and its target connection); otherwise each session echoes
	// one byte on a stream that it then closes, and stays open with no
	// stream (smux keepalives only).
	Active bool
}

// RelaySessionsResult is the relay's memory per session.
type RelaySessionsResult struct {
	URL              string        `json:"url"`
	Active           bool          `json:"active"`
	RelayPID         int           `json:"relay_pid,omitempty"`
	BaselineRSSBytes int64         `json:"baseline_rss_bytes,omitempty"`
	Steps            []SessionStep `json:"steps"`
	Errors           int64         `json:"errors"`
	ErrorSamples     []string      `json:"error_samples,omitempty"`
}

// SessionStep is the relay's memory while Open sessions were held.
type SessionStep struct {
	Sessions        int     `json:"sessions"` // asked for
	Open            int64   `json:"open"`     // set up successfully
	RSSBytes        int64   `json:"rss_bytes,omitempty"`
	BytesPerSession float64 `json:"bytes_per_session,omitempty"` // (RSSBytes - baseline) / Open
	CPUPercent      float64 `json:"relay_cpu_percent,omitempty"` // while held, sampling window
	OpenSeconds     float64 `json:"open_seconds"`
}

// RunRelaySessions opens sessions in steps and reports the relay's memory
// per session (given its PID). It closes every session before returning.
func RunRelaySessions(ctx context.Context, cfg RelaySessionsConfig) (RelaySessionsResult, error) {
	idleCfg, u, err := RelayIdleConfig{RelayRun: cfg.RelayRun, Carriers: cfg.Sessions}.withDefaults()
	if err != nil {
		return RelaySessionsResult{}, err
	}
	steps, settle := idleCfg.Carriers, idleCfg.Settle
	// Each session: a carrier, and with an active stream its target
	// connection on the relay's side; the load generator holds only the
	// carrier.
	if _, err := measure.RaiseFileLimit(uint64(slices.Max(steps)) + 256); err != nil {
		return RelaySessionsResult{}, err
	}
	d, err := idleCfg.dialer(u)
	if err != nil {
		return RelaySessionsResult{}, err
	}
	proc := procstat.Watcher{PID: cfg.PID}
	res := RelaySessionsResult{URL: u.String(), Active: cfg.Active, RelayPID: cfg.PID}
	if res.BaselineRSSBytes, err = proc.BaselineRSS(); err != nil {
		return res, err
	}
	ss := &sessionSet{dialer: d, u: u, active: cfg.Active, streamTimeout: idleCfg.HandshakeTimeout + 20*time.Second}
	attempted := 0
	for _, k := range steps {
		measure.Say(cfg.Progress, "relay sessions: opening sessions up to %d (active %v)", k, cfg.Active)
		start := time.Now()
		measure.RunPool(ctx, idleCfg.DialConcurrency, k-attempted, func() { ss.openOne(ctx) })
		attempted = k
		step := SessionStep{Sessions: k, OpenSeconds: measure.Seconds(time.Since(start))}
		if !sleep.For(ctx, settle) {
			break
		}
		ss.sample(ctx, &step, proc, settle, res.BaselineRSSBytes)
		res.Steps = append(res.Steps, step)
		measure.Say(cfg.Progress, "relay sessions: %d open, relay RSS %s (%.0f bytes/session), relay CPU %.0f%%",
			step.Open, measure.MiB(step.RSSBytes), step.BytesPerSession, step.CPUPercent)
	}
	ss.set.CloseAll()
	res.Errors = ss.failed.Load()
	res.ErrorSamples = ss.errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if len(res.Steps) > 0 && res.Steps[len(res.Steps)-1].Open == 0 {
		return res, fmt.Errorf("%w: no session opened (%v)", measure.ErrNoProgress, res.ErrorSamples)
	}
	return res, nil
}

// sessionSet is the sessions of one RunRelaySessions call.
type sessionSet struct {
	dialer        *websocket.Dialer
	u             *url.URL
	active        bool          // keep one stream per session open
	streamTimeout time.Duration // bound on the first stream's echo

	errs         measure.ErrorSamples
	failed, open atomic.Int64
	set          wscarrier.TunnelSet
}

// openOne opens a session and echoes one byte on a stream, which it keeps
// open if active.
func (ss *sessionSet) openOne(ctx context.Context) {
	t, err := wscarrier.OpenTunnel(ctx, ss.dialer, ss.u)
	if err != nil {
		ss.failed.Add(1)
		ss.errs.Add("carrier: " + err.Error())
		return
	}
	ss.set.AddTunnel(t)
	st, err := t.Mux.OpenStream()
	if err == nil {
		_ = st.SetDeadline(time.Now().Add(ss.streamTimeout))
		var b [1]byte
		if _, err = st.Write([]byte{'x'}); err == nil {
			_, err = io.ReadFull(st, b[:])
		}
		_ = st.SetDeadline(time.Time{})
	}
	if err != nil {
		ss.failed.Add(1)
		ss.errs.Add("stream: " + err.Error())
		if st != nil {
			st.Close()
		}
		return
	}
	if ss.active {
		ss.set.AddStream(st)
	} else {
		st.Close()
	}
	ss.open.Add(1)
}

// sample fills in step's open sessions and the relay's memory (the median
// of five samples over settle) and CPU.
func (ss *sessionSet) sample(ctx context.Context, step *SessionStep, proc procstat.Watcher, settle time.Duration, baseline int64) {
	first, _, _ := proc.Sample()
	var rss []int64
	var last procstat.ProcSample
	for range 5 {
		if s, ok, _ := proc.Sample(); ok {
			rss = append(rss, s.RSS)
			last = s
		}
		sleep.For(ctx, measure.SampleGap(settle))
	}
	step.Open = ss.open.Load()
	if len(rss) > 0 {
		step.RSSBytes = measure.Median(rss)
		step.CPUPercent = procstat.CPUPercent(first, last)
		if step.Open > 0 {
			step.BytesPerSession = float64(step.RSSBytes-baseline) / float64(step.Open)
		}
	}
}

// WriteTable writes rs as a readable table.
func (rs RelaySessionsResult) WriteTable(w io.Writer) {
	kind := "idle (no stream)"
	if rs.Active {
		kind = "active (one open stream)"
	}
	t := measure.NewTable(w)
	t.Title(fmt.Sprintf("relay %s: memory per %s session (baseline RSS %s)", rs.URL, kind, measure.MiBOrDash(rs.BaselineRSSBytes)))
	t.Line("sessions", "open", "relay RSS", "per session", "relay CPU", "open s")
	for _, s := range rs.Steps {
		t.Line(s.Sessions, s.Open, measure.MiBOrDash(s.RSSBytes), measure.KiB(s.BytesPerSession), measure.CPUOrDash(s.CPUPercent), fmt.Sprintf("%.1f", s.OpenSeconds))
	}
	t.Flush()
	fmt.Fprintf(w, "errors: %d\n", rs.Errors)
	measure.WriteErrors(w, rs.ErrorSamples)
}
