package broker

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/common/geoip"
	"github.com/flurrypt/flurry/internal/httperrlog"
	"github.com/flurrypt/flurry/internal/httprun"
)

// Server limits beyond Config's: a request header's size, and the slack
// the read and write timeouts leave beyond the longest long-poll (so that
// net/http never cancels one).
const (
	maxHeaderBytes = 16 << 10
	serverSlack    = 20 * time.Second
)

// Run listens on Config.ListenAddr (and Config.MetricsAddr, if set, where
// it serves OperatorHandler) and serves as Serve does until ctx ends.
func (b *Broker) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", b.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	var mln net.Listener
	if b.cfg.MetricsAddr != "" {
		if mln, err = lc.Listen(ctx, "tcp", b.cfg.MetricsAddr); err != nil {
			ln.Close()
			return fmt.Errorf("listen for metrics: %w", err)
		}
	}
	return b.serve(ctx, ln, mln)
}

// Serve serves Handler on ln (through Listener, with Config.TLSConfig),
// runs the background work (the metrics descriptor every MetricsInterval,
// the address counts of IPCountPrefix) and the readers of Config.SQS until
// ctx ends or one of them fails. Then it stops in order: Close, so that
// waiting proxies get "no match" at once; the HTTP server's graceful
// shutdown, which lets the clients in flight finish (at most
// ShutdownTimeout); and the background work. It returns the first failure,
// or nil. Call Run or Serve once.
func (b *Broker) Serve(ctx context.Context, ln net.Listener) error {
	return b.serve(ctx, ln, nil)
}

// serve is Serve, also serving OperatorHandler on mln if not nil.
func (b *Broker) serve(ctx context.Context, ln, mln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		failOnce sync.Once
		failed   error
	)
	fail := func(err error) {
		failOnce.Do(func() { failed = err })
		cancel()
	}
	longest := max(b.cfg.ProxyHold, b.cfg.ClientTimeout) + serverSlack
	srv := b.newServer(b.Handler(), longest)
	servers := []*http.Server{srv}
	listeners := []net.Listener{b.Listener(ln, b.cfg.TLSConfig)}
	if mln != nil {
		servers = append(servers, b.newServer(b.OperatorHandler(), serverSlack))
		listeners = append(listeners, countingListener{mln, b, stats.ListenerMetrics})
		b.cfg.Logger.Info("metrics listening", "addr", mln.Addr().String())
	}
	// The servers stop after Close, which answers the parked polls.
	serversCtx, stopServers := context.WithCancel(context.Background())
	defer stopServers()
	for i, srv := range servers {
		wg.Go(func() {
			if err := httprun.Serve(serversCtx, srv, listeners[i], b.cfg.ShutdownTimeout); err != nil {
				fail(err)
			}
		})
	}
	background := make(chan error, 1)
	go func() { background <- b.background(ctx) }()
	for _, q := range b.cfg.SQS {
		wg.Go(func() {
			if err := b.RunSQS(ctx, q); err != nil {
				fail(fmt.Errorf("SQS rendezvous (profile %q): %w", q.Profile, err))
			}
		})
	}
	b.cfg.Logger.Info("broker listening", "addr", ln.Addr().String(), "tls", b.cfg.TLSConfig != nil)

	<-ctx.Done()
	b.Close()
	stopServers()
	wg.Wait()
	if err := <-background; err != nil {
		b.cfg.Logger.Warn("background work", "err", err)
	}
	return failed
}

// newServer returns an HTTP server for h with the broker's limits; the
// read and write timeouts are timeout.
func (b *Broker) newServer(h http.Handler, timeout time.Duration) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: b.cfg.ReadHeaderTimeout,
		ReadTimeout:       timeout,
		WriteTimeout:      timeout,
		IdleTimeout:       b.cfg.IdleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          httperrlog.ErrorLog(b.cfg.Logger.Handler(), slog.LevelWarn),
	}
}

// background runs the broker's background work until ctx ends, then calls
// Close: every Config.MetricsInterval (the first one MetricsInterval
// after it starts) it ends a metrics period and appends its descriptor to
// Config.MetricsLogPath (or logs it); with Config.IPCountPrefix it also
// writes the address counts every IPCountInterval (and the partial one at
// the end). It returns once its goroutines have.
func (b *Broker) background(ctx context.Context) error {
	var ipErr error
	var wg sync.WaitGroup
	if b.ipCount != nil {
		wg.Go(func() { ipErr = b.ipCount.Run(ctx) })
	}
	err := b.stats.Run(ctx)
	b.Close()
	wg.Wait()
	return errors.Join(err, ipErr)
}

// Tor's geoip files, as Debian's tor-geoipdb installs them: flurry-broker's
// defaults.
const (
	DefaultGeoIPFile  = "/usr/share/tor/geoip"
	DefaultGeoIP6File = "/usr/share/tor/geoip6"
)

// OpenGeoIP opens tor-format geoip files for Config.GeoIP ("" leaves an
// address family out). A file missing at its default path
// (DefaultGeoIPFile, DefaultGeoIP6File) is left out with a warning, so that
// a broker starts on a machine without tor; if both are, OpenGeoIP returns
// nil and every country counts as "??". Any other file must load.
func OpenGeoIP(v4Path, v6Path string, log *slog.Logger) (*geoip.DB, error) {
	return openGeoIP([2]string{v4Path, v6Path}, [2]string{DefaultGeoIPFile, DefaultGeoIP6File}, log)
}

// openGeoIP is OpenGeoIP with the default paths given.
func openGeoIP(paths, defaults [2]string, log *slog.Logger) (*geoip.DB, error) {
	missing := false
	for i, def := range defaults {
		if _, err := os.Stat(paths[i]); paths[i] == def && errors.Is(err, fs.ErrNotExist) {
			if log != nil {
				log.Warn("geoip file missing (Debian package tor-geoipdb): no country counts from it", "file", def)
			}
			paths[i], missing = "", true
		}
	}
	if missing && paths == [2]string{} {
		return nil, nil
	}
	db, err := geoip.Open(paths[0], paths[1])
	if err != nil {
		return nil, err
	}
	// Parsing tor's files allocates ~90 MB that is garbage once the ~8 MB
	// tables are built: give it back to the OS now rather than at the
	// runtime's leisure, so the broker's resident size reflects its load.
	debug.FreeOSMemory()
	return db, nil
}

// Reload re-reads the geoip files and the poll-interval file (flurry-broker
// does on SIGHUP). What fails to load keeps its old contents, and the
// failure is logged.
func (b *Broker) Reload() {
	if err := b.ReloadGeoIP(); err != nil {
		b.cfg.Logger.Error("reload: keeping the old geoip tables", "err", err)
	}
	debug.FreeOSMemory() // as after the first load
	if err := b.ReloadPollIntervals(); err != nil {
		b.cfg.Logger.Error("reload: poll intervals not reloaded", "err", err)
	}
}

// acceptLogInterval is the least time between two logs of failed accepts:
// out of file descriptors, a listener fails every accept, and the server
// retries within a second.
const acceptLogInterval = 10 * time.Second

// acceptFailed counts a failed accept on listener (stats.ListenerRendezvous
// or stats.ListenerMetrics) and logs it, at most once per
// acceptLogInterval for all listeners.
func (b *Broker) acceptFailed(listener string, err error) {
	if errors.Is(err, net.ErrClosed) {
		return // closed: shutting down
	}
	noFiles := errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE)
	b.stats.AcceptFailed(listener, noFiles)
	now := time.Now().UnixNano()
	last := b.acceptLogged.Load()
	if last != 0 && now-last < int64(acceptLogInterval) || !b.acceptLogged.CompareAndSwap(last, now) {
		return
	}
	if noFiles {
		b.cfg.Logger.Warn("out of file descriptors: new connections wait in the kernel's queue; raise the file limit (LimitNOFILE, ulimit -n) or lower -max-conns-per-addr",
			"listener", listener, "log_interval", acceptLogInterval)
		return
	}
	b.cfg.Logger.Warn("accept failed", "listener", listener, "err", err, "log_interval", acceptLogInterval)
}

// countingListener counts and logs its failed accepts (Broker.acceptFailed).
type countingListener struct {
	net.Listener
	b    *Broker
	name string
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		l.b.acceptFailed(l.name, err)
	}
	return c, err
}
