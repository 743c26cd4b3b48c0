package report

import (
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/flurrypt/flurry/loadgen/attack"
	"github.com/flurrypt/flurry/loadgen/brokerload"
	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/relayload"
	"github.com/flurrypt/flurry/loadgen/soak"
)

// Result is one flurry-loadgen invocation, as written by WriteJSON: the
// machine and the results of whichever runs took place.
type Result struct {
	Tool            string                         `json:"tool"`
	Mode            string                         `json:"mode"`
	Started         time.Time                      `json:"started"`
	GoVersion       string                         `json:"go_version"`
	NumCPU          int                            `json:"num_cpu"`
	Broker          *brokerload.BrokerResult       `json:"broker,omitempty"`
	RelayIdle       *relayload.RelayIdleResult     `json:"relay_idle,omitempty"`
	RelayThroughput *relayload.ThroughputResult    `json:"relay_throughput,omitempty"`
	RelaySessions   *relayload.RelaySessionsResult `json:"relay_sessions,omitempty"`
	Chain           *chainload.ChainResult         `json:"chain,omitempty"`
	BrokerAttack    *attack.BrokerAttackResult     `json:"broker_attack,omitempty"`
	Attack          *attack.AttackResult           `json:"attack,omitempty"`
	SideBySide      *chainload.SideBySideResult    `json:"side_by_side,omitempty"`
	Soak            *soak.SoakResult               `json:"soak,omitempty"`
	RelayUsers      *relayload.RelayUsersResult    `json:"relay_users,omitempty"`
	ProxyUsers      *chainload.ProxyUsersResult    `json:"proxy_users,omitempty"`
	Error           string                         `json:"error,omitempty"`
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

// WriteTables writes every table r has: the runs' tables, with r's error
// if there is one, then those of the runs of several implementations
// (side by side, relay users, proxy users). It returns the first error.
func (r Result) WriteTables(w io.Writer) error {
	var err error
	if r.Broker != nil || r.RelayIdle != nil || r.RelayThroughput != nil || r.Chain != nil || r.BrokerAttack != nil || r.Attack != nil || r.Soak != nil {
		err = r.WriteTable(w)
	}
	keep := func(werr error) {
		if werr != nil && err == nil {
			err = werr
		}
	}
	if r.SideBySide != nil {
		keep(chainload.WriteSideBySideTable(w, *r.SideBySide))
	}
	if r.RelayUsers != nil {
		keep(relayload.WriteRelayUsersTable(w, *r.RelayUsers))
	}
	if r.ProxyUsers != nil {
		keep(chainload.WriteProxyUsersTable(w, *r.ProxyUsers))
	}
	return err
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
		attack.WriteBrokerAttack(w, a)
	}
	if s := r.Soak; s != nil {
		soak.WriteSoakTable(w, s)
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

// plots returns the charts r has data for.
func (r Result) plots() []measure.Plot {
	var out []measure.Plot
	if r.Broker != nil {
		out = append(out, r.Broker.Plots()...)
	}
	if r.RelayIdle != nil {
		out = append(out, r.RelayIdle.Plots()...)
	}
	return out
}

// HasPlots reports whether WriteSVG would draw anything.
func (r Result) HasPlots() bool { return len(r.plots()) > 0 }

// WriteSVG draws r's charts (latency and matches against load, memory
// against connections) stacked in one standalone SVG document. It needs no
// library: the SVG is written by hand.
func (r Result) WriteSVG(w io.Writer) error { return measure.WriteSVG(w, r.plots()) }
