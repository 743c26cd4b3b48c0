// Package httprun runs an http.Server on a listener until a context
// ends, then shuts it down gracefully within a bound: the part of the roles'
// Serve methods that is the same everywhere, and the one lifecycle of their
// Prometheus listeners (MetricsServer). It has no dependencies beyond
// net/http and internal/httperrlog, so that role libraries can use it.
package httprun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/flurrypt/flurry/internal/httperrlog"
)

// Limits of a MetricsServer: a scrape is one small request.
const (
	metricsHeaderTimeout = 5 * time.Second
	metricsReadTimeout   = 10 * time.Second
	metricsWriteTimeout  = 30 * time.Second
	metricsIdleTimeout   = time.Minute
	metricsHeaderBytes   = 8 << 10
	// MetricsShutdownTimeout is the bound to give Serve for a
	// MetricsServer.
	MetricsShutdownTimeout = time.Second
)

// MetricsServer returns the server of an operator's plain-HTTP metrics
// listener (the relay's -metrics-addr, the proxy's -metrics): h only, short
// timeouts, small headers, and net/http's errors at debug level on log,
// without the peer's text. Run it with Serve and MetricsShutdownTimeout.
func MetricsServer(h http.Handler, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: metricsHeaderTimeout,
		ReadTimeout:       metricsReadTimeout,
		WriteTimeout:      metricsWriteTimeout,
		IdleTimeout:       metricsIdleTimeout,
		MaxHeaderBytes:    metricsHeaderBytes,
		ErrorLog:          httperrlog.ErrorLog(log.Handler(), slog.LevelDebug),
	}
}

// Serve serves srv on ln until ctx ends or srv fails. When ctx ends it
// shuts srv down gracefully, closing the connections still open after
// timeout, and returns nil; otherwise it returns the error that stopped
// srv.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener, timeout time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
