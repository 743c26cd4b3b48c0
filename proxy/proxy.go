package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/pacing"
	"github.com/flurrypt/flurry/internal/httprun"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/messages"
)

// Proxy polls a broker for clients and relays them. Create it with New and
// start it with Run; several proxies can run in one process.
type Proxy struct {
	s    *settings
	log  *slog.Logger
	http *http.Client
	own  *http.Transport // non-nil when http uses a transport we created
	// se is what each peer connection's pion API is built from
	// (newPeerConnection).
	se webrtc.SettingEngine
	// shaper learns each offer's ICE credentials for covert DTLS's mimic.
	shaper *covertdtls.Shaper
	relay  *relayDialer
	slots  *slots
	m      *metrics
	// pacing spaces out what the proxy's WebRTC sockets send to each
	// client at its send window's pacing rate (sendwindow.go).
	pacing *pacing.Registry

	nat     atomic.Pointer[string] // current NAT type, one of the messages constants
	relayUp atomic.Bool            // the default relay answered the last check
	running atomic.Bool

	smallBufs sync.Pool // *[]byte of copyBufferSize
	largeBufs sync.Pool // *[]byte of MaxMessageSize, for rare large messages
	downBufs  sync.Pool // *[]byte of downstreamMessageSize, relay→client
}

// New checks cfg, fills in defaults and returns a Proxy ready to Run.
func New(cfg Config) (*Proxy, error) {
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	s.warn()
	p := &Proxy{s: s, log: s.Logger, slots: newSlots(s.Capacity), m: newMetrics(), pacing: s.Pacers}
	if p.pacing == nil {
		p.pacing = pacing.NewRegistry()
	}
	se, shaper, err := newSettingEngine(s, p.pacing)
	if err != nil {
		return nil, err
	}
	p.se, p.shaper = *se, shaper
	p.relay = newRelayDialer(s)
	p.http = s.HTTPClient
	if p.http == nil {
		p.own = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:     true,
			MaxIdleConns:          4,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: s.BrokerTimeout,
		}
		p.http = &http.Client{Transport: p.own}
	}
	unknown := messages.NATUnknown
	p.nat.Store(&unknown)
	p.relayUp.Store(true)
	size := s.MaxMessageSize
	p.smallBufs.New = func() any { b := make([]byte, copyBufferSize); return &b }
	p.largeBufs.New = func() any { b := make([]byte, size); return &b }
	p.downBufs.New = func() any { b := make([]byte, downstreamMessageSize); return &b }
	return p, nil
}

// NATType returns the proxy's current NAT type: "unknown" until a probe
// has succeeded, then "restricted" or "unrestricted".
func (p *Proxy) NATType() string { return *p.nat.Load() }

func (p *Proxy) setNAT(t string) {
	if old := p.NATType(); old != t {
		p.log.Info("NAT type", "type", t, "previous", old)
	}
	p.nat.Store(&t)
	p.m.setNAT(t)
}

// MetricsHandler serves the proxy's Prometheus metrics (its own registry).
func (p *Proxy) MetricsHandler() http.Handler { return p.m.handler() }

// Stats returns a snapshot of the proxy's counters.
func (p *Proxy) Stats() Stats {
	return Stats{
		Clients:         p.slots.count(),
		Relaying:        int(p.m.nRelaying.Load()),
		Connections:     p.m.nConnections.Load(),
		Failures:        p.m.nFailures.Load(),
		BytesToClient:   p.m.nToClient.Load(),
		BytesFromClient: p.m.nFromClient.Load(),
	}
}

// Run polls the broker and serves clients until ctx ends, then closes every
// session and returns once all of its goroutines have ended. It returns nil
// when ctx ends and an error only if the proxy cannot start.
func (p *Proxy) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errAlreadyRunning
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
		if p.own != nil {
			p.own.CloseIdleConnections()
		}
	}()

	if p.s.MetricsAddress != "" {
		if err := p.serveMetrics(ctx, &wg); err != nil {
			return err
		}
	}
	p.log.Info("proxy starting", "broker", p.s.BrokerURL, "relay", p.s.RelayURL,
		"pattern", p.s.AllowedRelayPattern, "relay_ports", p.s.relayPorts.String(), "capacity", p.s.Capacity)
	if p.s.natProbe != nil {
		wg.Go(func() { p.natLoop(ctx) })
	}
	if p.s.SummaryInterval > 0 {
		wg.Go(func() { p.summaryLoop(ctx) })
	}
	if p.s.RelayURL != "" {
		// Check the default relay before the first poll, then in the
		// background. Polling goes on either way: the broker may assign
		// other relays.
		retry := p.checkDefaultRelay(ctx, p.s.RelayRetryInterval)
		wg.Go(func() { p.relayCheckLoop(ctx, retry) })
	}
	p.pollLoop(ctx, &wg)
	return nil
}

// serveMetrics listens on MetricsAddress and serves MetricsHandler there
// until ctx ends.
func (p *Proxy) serveMetrics(ctx context.Context, wg *sync.WaitGroup) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", p.s.MetricsAddress)
	if err != nil {
		return fmt.Errorf("metrics listener: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(MetricsPath, p.MetricsHandler())
	wg.Go(func() {
		if err := httprun.Serve(ctx, httprun.MetricsServer(mux, p.log), ln, httprun.MetricsShutdownTimeout); err != nil {
			p.log.Warn("metrics server stopped", "err", err)
		}
	})
	p.log.Info("serving metrics", "address", ln.Addr().String(), "path", MetricsPath)
	return nil
}

// backoff returns the wait after n consecutive failures: PollInterval
// doubled n-1 times, capped at BackoffMax, with jitter in [d/2, d].
func (p *Proxy) backoff(n int) time.Duration {
	d := p.s.PollInterval
	for i := 1; i < n && d < p.s.BackoffMax; i++ {
		d *= 2
	}
	d = min(d, p.s.BackoffMax)
	if half := d / 2; half > 0 {
		d = half + rand.N(half+1)
	}
	return d
}

// nextPoll turns the broker's NextPoll (milliseconds, 0 = not given) into
// the wait before the next poll.
func (p *Proxy) nextPoll(ms int64) time.Duration {
	if ms <= 0 {
		return p.s.PollInterval
	}
	d := time.Duration(ms) * time.Millisecond
	return min(max(d, p.s.MinPollInterval), p.s.MaxPollInterval)
}

func (p *Proxy) pollLoop(ctx context.Context, wg *sync.WaitGroup) {
	failures := 0
	for {
		sl, err := p.slots.acquire(ctx)
		if err != nil {
			return
		}
		sid := newSid()
		resp, err := p.poll(ctx, sid, p.slots.count())
		var wait time.Duration
		switch {
		case ctx.Err() != nil:
			sl.release()
			return
		case errors.Is(err, messages.ErrIncorrectRelayPattern):
			sl.release()
			failures = 0
			wait = p.nextPoll(resp.NextPoll)
			if resp.NextPoll <= 0 {
				wait = p.s.MaxPollInterval
			}
			p.log.Error("broker rejected our relay pattern; set -allowed-relay-hostname-pattern to one the broker accepts",
				"pattern", p.s.AllowedRelayPattern, "next_poll", wait)
		case err != nil:
			sl.release()
			failures++
			wait = p.backoff(failures)
			p.log.Warn("poll failed", "err", err, "retry_in", wait)
		default:
			failures = 0
			wait = p.nextPoll(resp.NextPoll)
			if resp.Status == messages.StatusClientMatch {
				// Clients are waiting: the next poll comes as soon as
				// the broker could ask for it, not after its idle
				// interval (Snowflake's 20 s), so that a proxy with
				// free slots fills them in seconds.
				wait = p.s.MinPollInterval
				wg.Go(func() {
					defer sl.release()
					p.serve(ctx, sid, resp)
				})
			} else {
				sl.release()
			}
		}
		if !sleep.For(ctx, wait) {
			return
		}
	}
}

// checkDefaultRelay opens and closes a WebSocket to the default relay and
// returns the wait before the next check.
func (p *Proxy) checkDefaultRelay(ctx context.Context, retry time.Duration) time.Duration {
	cctx, cancel := context.WithTimeout(ctx, p.s.RelayDialTimeout)
	defer cancel()
	ws, err := p.relay.dial(cctx, p.s.RelayURL, noClientIP)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Warn("default relay unreachable; serving only clients for which the broker names another relay",
				"relay", p.s.RelayURL, "err", logReason(err), "retry_in", retry)
		}
		p.relayUp.Store(false)
		return retry
	}
	ws.Close()
	if !p.relayUp.Swap(true) {
		p.log.Info("default relay reachable again", "relay", p.s.RelayURL)
	}
	return 0
}

func (p *Proxy) relayCheckLoop(ctx context.Context, wait time.Duration) {
	retry := p.s.RelayRetryInterval
	for {
		if wait == 0 {
			wait = p.s.RelayRecheckInterval
			retry = p.s.RelayRetryInterval
		} else {
			retry = min(retry*2, p.s.RelayRecheckInterval)
		}
		if !sleep.For(ctx, wait) {
			return
		}
		wait = p.checkDefaultRelay(ctx, retry)
	}
}

func (p *Proxy) natLoop(ctx context.Context) {
	for {
		if _, err := p.ProbeNAT(ctx); err != nil && ctx.Err() == nil {
			p.log.Warn("NAT probe failed; keeping the current NAT type", "type", p.NATType(), "err", err)
		}
		if p.s.NATRetestInterval < 0 || !sleep.For(ctx, p.s.NATRetestInterval) {
			return
		}
	}
}

func (p *Proxy) summaryLoop(ctx context.Context) {
	t := time.NewTicker(p.s.SummaryInterval)
	defer t.Stop()
	last := p.Stats()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := p.Stats()
		p.log.Info(fmt.Sprintf("In the last %v, there were %d connections and %d failed connections. Traffic relayed ↓ %d bytes, ↑ %d bytes.",
			p.s.SummaryInterval, now.Connections-last.Connections, now.Failures-last.Failures,
			now.BytesToClient-last.BytesToClient, now.BytesFromClient-last.BytesFromClient),
			"clients", now.Clients, "nat", p.NATType())
		last = now
	}
}
