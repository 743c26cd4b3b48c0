package natprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/flurrypt/flurry/internal/httperrlog"
	"github.com/flurrypt/flurry/internal/httprun"
)

// HTTP server limits. A probe's request waits for ICE gathering
// (GatherTimeout, 10 s by default) before its answer is written.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 8 << 10
)

// Run listens on Config.ListenAddr and serves as Serve does until ctx
// ends, then closes the server.
func (s *Server) Run(ctx context.Context) error {
	defer s.Close()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.cfg.ListenAddr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	err = s.Serve(ctx, ln)
	if errors.Is(err, ErrClosed) {
		return nil
	}
	return err
}

// Serve serves Handler on ln (with TLS if Config.TLSConfig is set) until
// ctx ends or the server is closed, then shuts the HTTP server down
// gracefully (at most ShutdownTimeout). It does not end the probes in
// progress: Close does. After Close it returns ErrClosed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          httperrlog.ErrorLog(s.log.Handler(), slog.LevelDebug),
	}
	if s.cfg.TLSConfig != nil {
		ln = tls.NewListener(ln, s.cfg.TLSConfig)
	}
	s.log.Info("natprobe listening", "addr", ln.Addr().String(), "path", Path, "tls", s.cfg.TLSConfig != nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	if err := httprun.Serve(ctx, srv, ln, s.cfg.ShutdownTimeout); err != nil {
		return err
	}
	if s.closing.Err() != nil {
		return ErrClosed
	}
	return nil
}
