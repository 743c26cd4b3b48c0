// Package httprun runs an http.Server on a listener until a context
// ends, then shuts it down gracefully within a bound: the part of the roles'
// Serve methods that is the same everywhere. It has no dependencies beyond
// net/http, so that role libraries can use it.
package httprun

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

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
