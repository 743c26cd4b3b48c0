package chainload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/socks5"
)

// Chain modes.
const (
	// ChainGet sends an HTTP GET of ChainConfig.URL through the SOCKS5
	// proxy and reads the body.
	ChainGet = "get"
	// ChainRead connects to ChainConfig.Target through the proxy and reads
	// Bytes bytes (the target is a source).
	ChainRead = "read"
	// ChainEcho connects to ChainConfig.Target, writes Bytes bytes and
	// reads them back (the target echoes).
	ChainEcho = "echo"
)

// Defaults of ChainConfig.
const (
	DefaultChainRequests       = 5
	DefaultChainBytes          = 10 << 20
	DefaultChainRequestTimeout = 2 * time.Minute
	maxChainBytes              = 1 << 40
)

// ChainConfig configures RunChain.
type ChainConfig struct {
	// SOCKSAddr is the SOCKS5 proxy (host:port), e.g. flurry-client's.
	// Required.
	SOCKSAddr string
	// SOCKSUsername and SOCKSPassword, if set, are sent with RFC 1929
	// authentication (how tor passes bridge-line arguments to a pluggable
	// transport client).
	SOCKSUsername, SOCKSPassword string
	// Mode is ChainGet, ChainRead or ChainEcho. Default: ChainGet if URL is
	// set, else ChainRead.
	Mode string
	// URL is fetched in ChainGet mode (http:// only).
	URL string
	// Target (host:port) is what the proxy is asked to connect to in
	// ChainRead and ChainEcho modes. In a Snowflake-style chain the relay
	// decides where streams go, so this may be nominal.
	Target string
	// Bytes is read (ChainRead), echoed (ChainEcho) or at most read of a
	// body (ChainGet; 0 reads whole bodies) per request. Default
	// DefaultChainBytes for read and echo.
	Bytes int64
	// Requests is the total number of requests. Default
	// DefaultChainRequests.
	Requests int
	// Concurrency is how many requests run at once. Default 1.
	Concurrency int
	// RequestTimeout bounds each request. Default
	// DefaultChainRequestTimeout.
	RequestTimeout time.Duration
	// AllowNonLoopback allows a proxy or target not on loopback.
	AllowNonLoopback bool
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// ChainResult is what RunChain measured.
type ChainResult struct {
	SOCKS          string  `json:"socks"`
	Mode           string  `json:"mode"`
	Target         string  `json:"target"`
	Requests       int     `json:"requests"`
	Concurrency    int     `json:"concurrency"`
	OK             int64   `json:"ok"`
	Errors         int64   `json:"errors"`
	Bytes          int64   `json:"bytes"` // payload bytes received
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	// MBPerSec is Bytes over the whole run's wall time (MB = 10^6 bytes).
	MBPerSec float64 `json:"mb_per_sec"`
	// TTFB is from starting a request (SOCKS connect included) to its
	// first payload byte; Total to its last.
	TTFB         measure.Percentiles `json:"ttfb"`
	Total        measure.Percentiles `json:"total"`
	ErrorSamples []string            `json:"error_samples,omitempty"`
}

func (cfg ChainConfig) withDefaults() (ChainConfig, error) {
	if cfg.Mode == "" {
		cfg.Mode = ChainRead
		if cfg.URL != "" {
			cfg.Mode = ChainGet
		}
	}
	if cfg.Bytes == 0 && cfg.Mode != ChainGet {
		cfg.Bytes = DefaultChainBytes
	}
	if cfg.Requests == 0 {
		cfg.Requests = DefaultChainRequests
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 1
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = DefaultChainRequestTimeout
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	if cfg.SOCKSAddr == "" {
		return cfg, fmt.Errorf("%w: no SOCKS5 address", measure.ErrInvalidConfig)
	}
	if err := measure.CheckHostPort(cfg.SOCKSAddr, cfg.AllowNonLoopback); err != nil {
		return cfg, err
	}
	switch cfg.Mode {
	case ChainGet:
		u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "http")
		if err != nil {
			return cfg, err
		}
		cfg.Target = u.Host
	case ChainRead, ChainEcho:
		if err := measure.CheckHostPort(cfg.Target, cfg.AllowNonLoopback); err != nil {
			return cfg, err
		}
	default:
		return cfg, fmt.Errorf("%w: chain mode %q (want get, read or echo)", measure.ErrInvalidConfig, cfg.Mode)
	}
	switch {
	case cfg.Bytes < 0 || cfg.Bytes > maxChainBytes:
		return cfg, fmt.Errorf("%w: bytes out of range", measure.ErrInvalidConfig)
	case cfg.Requests < 0 || cfg.Requests > 1_000_000:
		return cfg, fmt.Errorf("%w: requests out of range 1..1000000", measure.ErrInvalidConfig)
	case cfg.Concurrency < 0 || cfg.Concurrency > 10_000:
		return cfg, fmt.Errorf("%w: concurrency out of range 1..10000", measure.ErrInvalidConfig)
	case cfg.RequestTimeout < 0:
		return cfg, fmt.Errorf("%w: negative timeout", measure.ErrInvalidConfig)
	}
	return cfg, nil
}

// RunChain runs cfg.Requests requests through the SOCKS5 proxy,
// cfg.Concurrency at a time, and reports throughput and time to first
// byte.
func RunChain(ctx context.Context, cfg ChainConfig) (ChainResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return ChainResult{}, err
	}
	if _, err := measure.RaiseFileLimit(uint64(cfg.Concurrency) + 256); err != nil {
		return ChainResult{}, err
	}
	res := ChainResult{SOCKS: cfg.SOCKSAddr, Mode: cfg.Mode, Target: cfg.Target, Requests: cfg.Requests, Concurrency: cfg.Concurrency}
	if cfg.Mode == ChainGet {
		res.Target = cfg.URL
	}
	sd := &socks5.Dialer{Proxy: cfg.SOCKSAddr, User: cfg.SOCKSUsername, Password: cfg.SOCKSPassword, Dialer: measure.NewDialer(cfg.AllowNonLoopback)}
	hc := chainHTTPClient(sd, cfg.RequestTimeout)
	defer hc.CloseIdleConnections()

	var (
		ok, failed     atomic.Int64
		total          atomic.Int64
		ttfb, duration = measure.NewRecorder(), measure.NewRecorder()
		errs           measure.ErrorSamples
	)
	start := time.Now()
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, func() string {
		el := time.Since(start)
		return fmt.Sprintf("chain: %.0fs, %d/%d requests done, %d errors, %.2f MB/s",
			el.Seconds(), ok.Load()+failed.Load(), cfg.Requests, failed.Load(), float64(total.Load())/1e6/el.Seconds())
	})
	measure.RunPool(ctx, cfg.Concurrency, cfg.Requests, func() {
		t0 := time.Now()
		first, err := chainRequest(ctx, cfg, hc, sd, &total)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			failed.Add(1)
			errs.Add(err.Error())
			return
		}
		ok.Add(1)
		if !first.IsZero() {
			ttfb.Add(first.Sub(t0))
		}
		duration.Add(time.Since(t0))
	})
	prog.Stop()
	elapsed := time.Since(start)
	res.OK, res.Errors, res.Bytes = ok.Load(), failed.Load(), total.Load()
	res.ElapsedSeconds = measure.Seconds(elapsed)
	res.MBPerSec = float64(int64(float64(res.Bytes)/1e6/elapsed.Seconds()*1000)) / 1000
	res.TTFB, res.Total = ttfb.Percentiles(), duration.Percentiles()
	res.ErrorSamples = errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.OK == 0 {
		return res, fmt.Errorf("%w: every request failed (%v)", measure.ErrNoProgress, res.ErrorSamples)
	}
	return res, nil
}

// chainHTTPClient is the client of ChainGet: every request a fresh
// connection through sd, no redirect followed.
func chainHTTPClient(sd *socks5.Dialer, timeout time.Duration) *http.Client {
	return &http.Client{
		Transport: &http.Transport{
			Proxy:              nil,
			DialContext:        sd.DialContext,
			DisableKeepAlives:  true, // every request is a fresh stream through the chain
			DisableCompression: true,
		},
		Timeout: timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// chainRequest makes one request of cfg.Mode, bounded by RequestTimeout,
// counting its bytes in total; it returns when the first byte came.
func chainRequest(ctx context.Context, cfg ChainConfig, hc *http.Client, sd *socks5.Dialer, total *atomic.Int64) (time.Time, error) {
	reqCtx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
	defer cancel()
	switch cfg.Mode {
	case ChainGet:
		return chainGet(reqCtx, hc, cfg.URL, cfg.Bytes, total)
	case ChainRead:
		return chainRead(reqCtx, sd, cfg.Target, cfg.Bytes, total)
	case ChainEcho:
		return chainEcho(reqCtx, sd, cfg.Target, cfg.Bytes, total)
	}
	return time.Time{}, nil
}

// countingReader counts what it reads and notes when the first byte came.
type countingReader struct {
	r     io.Reader
	total *atomic.Int64
	n     int64
	first time.Time
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if n > 0 {
		if c.first.IsZero() {
			c.first = time.Now()
		}
		c.n += int64(n)
		c.total.Add(int64(n))
	}
	return n, err
}

func chainGet(ctx context.Context, hc *http.Client, url string, limit int64, total *atomic.Int64) (time.Time, error) {
	var firstHeader time.Time
	trace := &httptrace.ClientTrace{GotFirstResponseByte: func() { firstHeader = time.Now() }}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		return time.Time{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return time.Time{}, fmt.Errorf("get: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return firstHeader, fmt.Errorf("get: HTTP status %d", resp.StatusCode)
	}
	var body io.Reader = resp.Body
	if limit > 0 {
		body = io.LimitReader(body, limit)
	}
	cr := &countingReader{r: body, total: total}
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(io.Discard, cr, buf); err != nil {
		return firstHeader, fmt.Errorf("get body: %w", err)
	}
	return firstHeader, nil
}

// stopOnCancel closes c when ctx ends; call the returned func when done.
func stopOnCancel(ctx context.Context, c net.Conn) func() bool {
	return context.AfterFunc(ctx, func() { c.Close() })
}

func chainRead(ctx context.Context, sd *socks5.Dialer, target string, n int64, total *atomic.Int64) (time.Time, error) {
	c, err := sd.DialContext(ctx, "tcp", target)
	if err != nil {
		return time.Time{}, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	defer stopOnCancel(ctx, c)()
	cr := &countingReader{r: io.LimitReader(c, n), total: total}
	buf := make([]byte, 32<<10)
	if _, err := io.CopyBuffer(io.Discard, cr, buf); err != nil {
		return cr.first, fmt.Errorf("read: %w", err)
	}
	if cr.n < n {
		return cr.first, fmt.Errorf("read: %w after %d of %d bytes", io.ErrUnexpectedEOF, cr.n, n)
	}
	return cr.first, nil
}

func chainEcho(ctx context.Context, sd *socks5.Dialer, target string, n int64, total *atomic.Int64) (time.Time, error) {
	c, err := sd.DialContext(ctx, "tcp", target)
	if err != nil {
		return time.Time{}, fmt.Errorf("connect: %w", err)
	}
	defer c.Close()
	defer stopOnCancel(ctx, c)()
	var (
		writer sync.WaitGroup
		werr   error
	)
	writer.Go(func() {
		chunk := make([]byte, 16<<10)
		for left := n; left > 0; {
			m, err := c.Write(chunk[:min(int64(len(chunk)), left)])
			left -= int64(m)
			if err != nil {
				werr = err
				return
			}
		}
	})
	cr := &countingReader{r: io.LimitReader(c, n), total: total}
	buf := make([]byte, 32<<10)
	_, err = io.CopyBuffer(io.Discard, cr, buf)
	if err != nil || cr.n < n {
		c.Close() // unblock the writer
	}
	writer.Wait()
	switch {
	case err != nil:
		return cr.first, fmt.Errorf("echo read: %w", err)
	case cr.n < n:
		return cr.first, fmt.Errorf("echo read: %w after %d of %d bytes", io.ErrUnexpectedEOF, cr.n, n)
	case werr != nil && !errors.Is(werr, net.ErrClosed):
		return cr.first, fmt.Errorf("echo write: %w", werr)
	}
	return cr.first, nil
}

// WriteTable writes c as a readable table.
func (c ChainResult) WriteTable(w io.Writer) {
	t := measure.NewTable(w)
	t.Title(fmt.Sprintf("chain via SOCKS5 %s to %s (%s)", c.SOCKS, c.Target, c.Mode))
	t.Line("requests", "ok", "errors", "MB", "seconds", "MB/s", "TTFB p50 ms", "TTFB p90 ms", "TTFB p99 ms", "total p50 ms")
	t.Line(c.Requests, c.OK, c.Errors, fmt.Sprintf("%.1f", float64(c.Bytes)/1e6), fmt.Sprintf("%.1f", c.ElapsedSeconds),
		fmt.Sprintf("%.2f", c.MBPerSec), fmt.Sprintf("%.1f", c.TTFB.P50Ms), fmt.Sprintf("%.1f", c.TTFB.P90Ms),
		fmt.Sprintf("%.1f", c.TTFB.P99Ms), fmt.Sprintf("%.1f", c.Total.P50Ms))
	t.Flush()
	measure.WriteErrors(w, c.ErrorSamples)
}
