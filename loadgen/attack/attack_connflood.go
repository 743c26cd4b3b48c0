package attack

import (
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The connection flood (AttackConnFlood): from each of a few addresses,
// ConnsPerAddr workers each keep one TCP connection to the broker open. A
// worker dials, sends nothing and waits for the broker to close the
// connection (at once, when the address is over -max-conns-per-addr; after
// the header timeout otherwise), then dials again; after a refusal or a
// failed dial it pauses floodRetryPause first, so that refused workers do
// not spin. The flood ends with its phase or after Requests connection
// attempts in all. Together the addresses can hold the broker's file
// limit's worth of connections: the attack on its file descriptors.

// Defaults of the connection flood.
const (
	// DefaultFloodConnsPerAddr is a little over the broker's default
	// -max-conns-per-addr (512), so that every flooding address reaches
	// its cap and refusals are seen.
	DefaultFloodConnsPerAddr = 600
	// DefaultFloodRequests bounds the connections a flood opens in all.
	DefaultFloodRequests = 200_000

	maxFloodConnsPerAddr = 20_000
	// floodRefusedWithin: a connection the broker closes this soon,
	// without a byte, was refused at accept.
	floodRefusedWithin = time.Second
	// floodRetryPause is a worker's pause after a refusal or a failed
	// dial.
	floodRetryPause = time.Second
	// floodDialTimeout bounds a dial (a broker out of file descriptors
	// leaves connections in its listen queue).
	floodDialTimeout = 5 * time.Second
)

// DefaultFloodAddrs are the connection flood's source addresses.
var DefaultFloodAddrs = []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"}

// ConnFloodCounts is what the connection flood's connections got.
type ConnFloodCounts struct {
	Addrs        []string `json:"addrs"`
	ConnsPerAddr int      `json:"conns_per_addr"`
	// Opened connections; of them ClosedAtOnce were closed by the broker
	// within a second without a byte (refused at accept), ClosedLater
	// after longer (its header timeout). DialErrors failed to connect
	// (refused, timed out: a listen queue the broker does not drain).
	Opened       int64 `json:"opened"`
	ClosedAtOnce int64 `json:"closed_at_once"`
	ClosedLater  int64 `json:"closed_later"`
	DialErrors   int64 `json:"dial_errors"`
	// PeakHeld is the most connections open at once, MeanHeld their
	// mean over the phase (sampled every 100 ms).
	PeakHeld int64   `json:"peak_held"`
	MeanHeld float64 `json:"mean_held"`
}

// BrokerConnCounts is the growth of the broker's own connection counters
// over a phase (counters rounded up to multiples of 8 by the broker).
type BrokerConnCounts struct {
	// Refused: flurry_broker_connections_refused_total (closed at accept,
	// over -max-conns-per-addr).
	Refused float64 `json:"connections_refused"`
	// AcceptNoFiles and AcceptOther: flurry_broker_accept_errors_total
	// with error="no_files" (EMFILE, ENFILE) and the others.
	AcceptNoFiles float64 `json:"accept_errors_no_files"`
	AcceptOther   float64 `json:"accept_errors_other"`
	// GoroutinesAfter: go_goroutines at the end of the phase.
	GoroutinesAfter float64 `json:"goroutines_after"`
}

// labelValue returns the value of m's label name, "" if it has none.
func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
