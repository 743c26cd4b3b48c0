package servercmd

import (
	"context"
	"os"
	"os/signal"
)

// OnSignal calls fn on every sig until ctx ends (a reload on SIGHUP).
func OnSignal(ctx context.Context, sig os.Signal, fn func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, sig)
	defer signal.Stop(c)
	for {
		select {
		case <-ctx.Done():
			return
		case <-c:
			fn()
		}
	}
}
