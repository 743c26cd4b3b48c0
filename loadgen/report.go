package loadgen

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"
)

// Result is one flurry-loadgen invocation, as written by WriteJSON: the
// machine and the results of whichever runs took place.
type Result struct {
	Tool            string               `json:"tool"`
	Mode            string               `json:"mode"`
	Started         time.Time            `json:"started"`
	GoVersion       string               `json:"go_version"`
	NumCPU          int                  `json:"num_cpu"`
	Broker          *BrokerResult        `json:"broker,omitempty"`
	RelayIdle       *RelayIdleResult     `json:"relay_idle,omitempty"`
	RelayThroughput *ThroughputResult    `json:"relay_throughput,omitempty"`
	RelaySessions   *RelaySessionsResult `json:"relay_sessions,omitempty"`
	Chain           *ChainResult         `json:"chain,omitempty"`
	BrokerAttack    *BrokerAttackResult  `json:"broker_attack,omitempty"`
	Attack          *AttackResult        `json:"attack,omitempty"`
	SideBySide      *SideBySideResult    `json:"side_by_side,omitempty"`
	Soak            *SoakResult          `json:"soak,omitempty"`
	RelayUsers      *RelayUsersResult    `json:"relay_users,omitempty"`
	ProxyUsers      *ProxyUsersResult    `json:"proxy_users,omitempty"`
	Error           string               `json:"error,omitempty"`
}

// NewResult returns a Result for mode with the machine filled in.
func NewResult(mode string) Result {
	return Result{Tool: "flurry-loadgen", Mode: mode, Started: time.Now().UTC(), GoVersion: runtime.Version(), NumCPU: runtime.NumCPU()}
}

// WriteJSON writes r as indented JSON.
func (r Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func kib(b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

func mibOrDash(b int64) string {
	if b == 0 {
		return "-"
	}
	return mib(b)
}

func cpuOrDash(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", p)
}

func microsOrDash(us float64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", us)
}

// WriteTable writes r as readable tables.
func (r Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells ...any) {
		parts := make([]string, len(cells))
		for i, c := range cells {
			parts[i] = fmt.Sprint(c)
		}
		fmt.Fprintln(tw, strings.Join(parts, "\t")+"\t")
	}
	title := func(s string) {
		tw.Flush()
		fmt.Fprintf(w, "\n%s\n", s)
	}
	if b := r.Broker; b != nil {
		if b.Idle != nil {
			arrival := "in batches"
			if b.Idle.Burst {
				arrival = "arriving at once"
			}
			title(fmt.Sprintf("broker %s: memory per waiting proxy poll, %s (baseline RSS %s)", b.URL, arrival, mibOrDash(b.Idle.BaselineRSSBytes)))
			window := b.Idle.WindowSeconds > 0 // the largest sample too
			head := []any{"polls", "waiting", "broker RSS", "per poll"}
			if window {
				head = append(head, "max RSS", "max per poll")
			}
			line(head...)
			for _, s := range b.Idle.Steps {
				cells := []any{s.Polls, s.Waiting, mibOrDash(s.RSSBytes), kib(s.BytesPerPoll)}
				if window {
					cells = append(cells, mibOrDash(s.MaxRSSBytes), kib(s.MaxBytesPerPoll))
				}
				line(cells...)
			}
		}
		title(fmt.Sprintf("broker %s: %d proxies (NAT %s; types %s), clients NAT %s, %.0fs steps",
			b.URL, b.Proxies, b.ProxyNAT, b.ProxyTypes, b.ClientNAT, b.StepSeconds))
		line("clients", "offers", "matches", "matches/s", "denials", "timeouts", "errors", "p50 ms", "p90 ms", "p99 ms", "broker RSS", "broker CPU", "CPU µs/match")
		for _, s := range b.Steps {
			line(s.Clients, s.Offers, s.Matches, fmt.Sprintf("%.0f", s.MatchesPerSec), s.Denials, s.Timeouts, s.Errors,
				fmt.Sprintf("%.2f", s.Latency.P50Ms), fmt.Sprintf("%.2f", s.Latency.P90Ms), fmt.Sprintf("%.2f", s.Latency.P99Ms),
				mibOrDash(s.BrokerRSSBytes), cpuOrDash(s.BrokerCPUPercent), microsOrDash(s.BrokerCPUPerMatchMicros))
		}
		p := b.Proxy
		tw.Flush()
		fmt.Fprintf(w, "proxies: %d polls, %d matched, %d no match, %d relay pattern rejected, %d errors; answers: %d success, %d client gone, %d errors\n",
			p.Polls, p.Matches, p.NoMatch, p.RelayPatternRejected, p.Errors, p.AnswersSuccess, p.AnswersClientGone, p.AnswerErrors)
		for _, l := range b.Leftovers {
			if l.Error != "" {
				fmt.Fprintf(w, "after the load, %s: %s\n", l.URL, l.Error)
				continue
			}
			fmt.Fprintf(w, "after the load, %s: %.0f waiting polls, %.0f goroutines\n", l.URL, l.WaitingPolls, l.Goroutines)
		}
		writeErrors(w, b.ErrorSamples)
	}
	if ri := r.RelayIdle; ri != nil {
		title(fmt.Sprintf("relay %s: memory per idle carrier (baseline RSS %s)", ri.URL, mibOrDash(ri.BaselineRSSBytes)))
		line("carriers", "open", "relay RSS", "per carrier", "dial s")
		for _, s := range ri.Steps {
			line(s.Carriers, s.Open, mibOrDash(s.RSSBytes), kib(s.BytesPerCarrier), fmt.Sprintf("%.1f", s.DialSeconds))
		}
		tw.Flush()
		fmt.Fprintf(w, "dial errors: %d, closed by relay: %d\n", ri.DialErrors, ri.ClosedByRelay)
		writeErrors(w, ri.ErrorSamples)
	}
	if rs := r.RelaySessions; rs != nil {
		kind := "idle (no stream)"
		if rs.Active {
			kind = "active (one open stream)"
		}
		title(fmt.Sprintf("relay %s: memory per %s session (baseline RSS %s)", rs.URL, kind, mibOrDash(rs.BaselineRSSBytes)))
		line("sessions", "open", "relay RSS", "per session", "relay CPU", "open s")
		for _, s := range rs.Steps {
			line(s.Sessions, s.Open, mibOrDash(s.RSSBytes), kib(s.BytesPerSession), cpuOrDash(s.CPUPercent), fmt.Sprintf("%.1f", s.OpenSeconds))
		}
		tw.Flush()
		fmt.Fprintf(w, "errors: %d\n", rs.Errors)
		writeErrors(w, rs.ErrorSamples)
	}
	if t := r.RelayThroughput; t != nil {
		title(fmt.Sprintf("relay %s: throughput (%s)", t.URL, t.Mode))
		line("carriers", "streams", "seconds", "MB received", "MB/s", "TTFB p50 ms", "TTFB p99 ms", "errors", "relay RSS", "relay CPU")
		line(t.Carriers, t.StreamsConnected, fmt.Sprintf("%.1f", t.ElapsedSeconds), fmt.Sprintf("%.1f", float64(t.BytesReceived)/1e6),
			fmt.Sprintf("%.2f", t.MBPerSec), fmt.Sprintf("%.1f", t.TTFB.P50Ms), fmt.Sprintf("%.1f", t.TTFB.P99Ms), t.StreamErrors,
			mibOrDash(t.RelayRSSBytes), cpuOrDash(t.RelayCPUPercent))
		tw.Flush()
		writeErrors(w, t.ErrorSamples)
	}
	if c := r.Chain; c != nil {
		title(fmt.Sprintf("chain via SOCKS5 %s to %s (%s)", c.SOCKS, c.Target, c.Mode))
		line("requests", "ok", "errors", "MB", "seconds", "MB/s", "TTFB p50 ms", "TTFB p90 ms", "TTFB p99 ms", "total p50 ms")
		line(c.Requests, c.OK, c.Errors, fmt.Sprintf("%.1f", float64(c.Bytes)/1e6), fmt.Sprintf("%.1f", c.ElapsedSeconds),
			fmt.Sprintf("%.2f", c.MBPerSec), fmt.Sprintf("%.1f", c.TTFB.P50Ms), fmt.Sprintf("%.1f", c.TTFB.P90Ms),
			fmt.Sprintf("%.1f", c.TTFB.P99Ms), fmt.Sprintf("%.1f", c.Total.P50Ms))
		tw.Flush()
		writeErrors(w, c.ErrorSamples)
	}
	if a := r.BrokerAttack; a != nil {
		tw.Flush()
		writeBrokerAttack(w, a)
	}
	if s := r.Soak; s != nil {
		tw.Flush()
		WriteSoakTable(w, s)
	}
	if a := r.Attack; a != nil {
		tw.Flush()
		if err := a.WriteText(w); err != nil {
			return err
		}
	}
	if r.Error != "" {
		fmt.Fprintf(w, "\nerror: %s\n", r.Error)
	}
	return tw.Flush()
}

func writeErrors(w io.Writer, samples []string) {
	for _, s := range samples {
		fmt.Fprintf(w, "  error sample: %s\n", s)
	}
}
