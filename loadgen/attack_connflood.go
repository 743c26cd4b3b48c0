package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/flurrypt/flurry/internal/sleep"
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

// floodDefaults fills in and checks the connection flood's fields.
func (cfg *BrokerAttackConfig) floodDefaults() error {
	if len(cfg.FloodAddrs) == 0 {
		cfg.FloodAddrs = DefaultFloodAddrs
	}
	cfg.FloodAddrs = append([]string(nil), cfg.FloodAddrs...)
	if cfg.ConnsPerAddr == 0 {
		cfg.ConnsPerAddr = DefaultFloodConnsPerAddr
	}
	if cfg.ConnsPerAddr < 1 || cfg.ConnsPerAddr > maxFloodConnsPerAddr {
		return fmt.Errorf("%w: connections per address %d out of range 1..%d", ErrInvalidConfig, cfg.ConnsPerAddr, maxFloodConnsPerAddr)
	}
	if len(cfg.FloodAddrs) > 16 {
		return fmt.Errorf("%w: at most 16 flood addresses (a few addresses is the attack)", ErrInvalidConfig)
	}
	for _, s := range cfg.FloodAddrs {
		a, err := netip.ParseAddr(s)
		if err != nil || !attackerAddrOK(a) {
			return fmt.Errorf("%w: flood address %q: want an IPv4 loopback address outside 127.1.0.0/16 and 127.2.0.0/16 (the honest peers')", ErrInvalidConfig, s)
		}
	}
	return nil
}

// runConnFlood runs the connection flood until phaseCtx ends or
// cfg.Requests connections have been attempted, then fills in counts.
func (r *attackRun) runConnFlood(phaseCtx context.Context, counts *AttackerCounts) {
	var (
		attempts, opened, atOnce, later, dialErrs, held atomic.Int64
		wg                                              sync.WaitGroup
	)
	start := time.Now()
	for _, s := range r.cfg.FloodAddrs {
		src := netip.MustParseAddr(s) // checked by floodDefaults
		d := *r.client.dialer
		d.Timeout = floodDialTimeout
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		bindLate(&d)
		for range r.cfg.ConnsPerAddr {
			wg.Go(func() {
				var buf [1]byte
				for phaseCtx.Err() == nil && attempts.Add(1) <= int64(r.cfg.Requests) {
					conn, err := d.DialContext(phaseCtx, "tcp", r.client.addr)
					if err != nil {
						if phaseCtx.Err() != nil {
							return
						}
						dialErrs.Add(1)
						r.errs.add("flood dial: " + err.Error())
						sleep.For(phaseCtx, floodRetryPause)
						continue
					}
					opened.Add(1)
					held.Add(1)
					t0 := time.Now()
					stop := context.AfterFunc(phaseCtx, func() { conn.Close() })
					_, err = conn.Read(buf[:]) // the broker sends nothing before a request
					stop()
					conn.Close()
					held.Add(-1)
					if phaseCtx.Err() != nil {
						return
					}
					if time.Since(t0) < floodRefusedWithin {
						atOnce.Add(1)
						if !errors.Is(err, net.ErrClosed) {
							sleep.For(phaseCtx, floodRetryPause)
						}
					} else {
						later.Add(1)
					}
				}
			})
		}
	}
	// Sample how many are held until the workers are done.
	done := make(chan struct{})
	var peak, sum, n int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h := held.Load()
				peak, sum, n = max(peak, h), sum+h, n+1
			}
		}
	})
	wg.Wait()
	close(done)
	sampler.Wait()
	fc := &ConnFloodCounts{
		Addrs: r.cfg.FloodAddrs, ConnsPerAddr: r.cfg.ConnsPerAddr,
		Opened: opened.Load(), ClosedAtOnce: atOnce.Load(), ClosedLater: later.Load(), DialErrors: dialErrs.Load(),
		PeakHeld: peak,
	}
	if n > 0 {
		fc.MeanHeld = float64(sum) / float64(n)
	}
	*counts = AttackerCounts{
		Sent: opened.Load() + dialErrs.Load(), Seconds: seconds(time.Since(start)),
		Refused: atOnce.Load(), Errors: dialErrs.Load(), Flood: fc,
	}
}

// brokerConnCounts scrapes cfg.MetricsURL; nil without one or on error
// (which is recorded).
func (r *attackRun) brokerConnCounts(ctx context.Context) *BrokerConnCounts {
	if r.cfg.MetricsURL == "" {
		return nil
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// A broker out of file descriptors may not answer at once.
	fams, err := scrape(ctx, client, r.cfg.MetricsURL)
	for try := 0; err != nil && try < 5 && sleep.For(ctx, time.Second); try++ {
		fams, err = scrape(ctx, client, r.cfg.MetricsURL)
	}
	if err != nil {
		r.errs.add("broker metrics: " + err.Error())
		return nil
	}
	c := &BrokerConnCounts{
		Refused:         sumFamily(fams["flurry_broker_connections_refused_total"]),
		GoroutinesAfter: sumFamily(fams["go_goroutines"]),
	}
	for _, m := range fams["flurry_broker_accept_errors_total"].GetMetric() {
		if labelValue(m, "error") == "no_files" {
			c.AcceptNoFiles += m.GetCounter().GetValue()
		} else {
			c.AcceptOther += m.GetCounter().GetValue()
		}
	}
	return c
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
