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
	if b := r.Broker; b != nil {
		b.WriteTable(w)
	}
	if ri := r.RelayIdle; ri != nil {
		ri.WriteTable(w)
	}
	if rs := r.RelaySessions; rs != nil {
		rs.WriteTable(w)
	}
	if t := r.RelayThroughput; t != nil {
		t.WriteTable(w)
	}
	if c := r.Chain; c != nil {
		c.WriteTable(w)
	}
	if a := r.BrokerAttack; a != nil {
		writeBrokerAttack(w, a)
	}
	if s := r.Soak; s != nil {
		WriteSoakTable(w, s)
	}
	if a := r.Attack; a != nil {
		if err := a.WriteText(w); err != nil {
			return err
		}
	}
	if r.Error != "" {
		fmt.Fprintf(w, "\nerror: %s\n", r.Error)
	}
	return nil
}

// table writes right-aligned columns under titles, as flurry-loadgen
// prints its results.
type table struct {
	w  io.Writer
	tw *tabwriter.Writer
}

func newTable(w io.Writer) *table {
	return &table{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

// line writes one row.
func (t *table) line(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t")+"\t")
}

// title ends the rows so far and writes a title line.
func (t *table) title(s string) {
	t.flush()
	fmt.Fprintf(t.w, "\n%s\n", s)
}

// flush writes the rows so far; text written to the underlying writer
// after it follows them.
func (t *table) flush() { t.tw.Flush() }

func writeErrors(w io.Writer, samples []string) {
	for _, s := range samples {
		fmt.Fprintf(w, "  error sample: %s\n", s)
	}
}
