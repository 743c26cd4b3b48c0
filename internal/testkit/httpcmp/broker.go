package httpcmp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/messages"
)

// The servers ServeBroker knows.
const (
	ServerFlurry   = "flurry"
	ServerNetHTTP  = "nethttp"
	ServerFastHTTP = "fasthttp"
)

// Servers are the names ServeBroker accepts, in the order the comparison
// runs them.
var Servers = []string{ServerFlurry, ServerNetHTTP, ServerFastHTTP}

// ErrUnknownServer is returned by ServeBroker for a name not in Servers.
var ErrUnknownServer = errors.New("unknown server")

// Timeouts of the compared servers, those Broker.Serve gives net/http for
// a broker of the default configuration.
const (
	readHeaderTimeout = broker.DefaultReadHeaderTimeout
	idleTimeout       = broker.DefaultIdleTimeout
	requestTimeout    = broker.DefaultProxyHold + 20*time.Second
	shutdownTimeout   = 5 * time.Second
)

// ServeBroker serves b's Handler on ln with the named server until ctx
// ends, then closes b and the server.
func ServeBroker(ctx context.Context, b *broker.Broker, ln net.Listener, server string, log *slog.Logger) error {
	switch server {
	case ServerFlurry:
		return b.Serve(ctx, ln)
	case ServerNetHTTP:
		srv := &http.Server{
			Handler:           b.Handler(),
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       requestTimeout,
			WriteTimeout:      requestTimeout,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    16 << 10,
			ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		}
		return serveUntil(ctx, b, func() error { return srv.Serve(ln) }, func(ctx context.Context) error { return srv.Shutdown(ctx) })
	case ServerFastHTTP:
		srv := &fasthttp.Server{
			Handler:               fastHTTPHandler(b.Handler()),
			ReadTimeout:           requestTimeout,
			WriteTimeout:          requestTimeout,
			IdleTimeout:           idleTimeout,
			MaxRequestBodySize:    messages.MaxBodySize,
			NoDefaultServerHeader: true,
			Logger:                slog.NewLogLogger(log.Handler(), slog.LevelDebug),
		}
		return serveUntil(ctx, b, func() error { return srv.Serve(ln) }, srv.ShutdownWithContext)
	}
	return fmt.Errorf("%w %q (one of %q)", ErrUnknownServer, server, Servers)
}

// serveUntil runs serve until ctx ends, then closes b (its waiting polls
// are answered) and shuts the server down.
func serveUntil(ctx context.Context, b *broker.Broker, serve func() error, shutdown func(context.Context) error) error {
	errc := make(chan error, 1)
	go func() { errc <- serve() }()
	select {
	case err := <-errc:
		b.Close()
		return err
	case <-ctx.Done():
	}
	b.Close()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	err := shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
