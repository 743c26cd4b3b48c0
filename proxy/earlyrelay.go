package proxy

import (
	"context"
	"net/netip"
	"time"

	"github.com/gorilla/websocket"
)

// earlyRelayMaxAge is how long a WebSocket opened ahead may have waited
// for the client's DataChannel and still be used: relays close a carrier
// that has not sent the client's token within a few seconds of the upgrade
// (Flurry's after 5 s, Snowflake's server after 10 s). An older one is
// closed and the relay dialled again.
const earlyRelayMaxAge = 3 * time.Second

// earlyRelay is a relay WebSocket dialled before the client's DataChannel
// opened.
type earlyRelay struct {
	p        *Proxy
	relayURL string
	clientIP netip.Addr
	done     chan struct{} // closed once ws, err and at are set
	ws       *websocket.Conn
	err      error
	at       time.Time // when the dial ended
	cancel   context.CancelFunc
	taken    bool
}

// dialRelayEarly starts dialling the relay in the background.
func (p *Proxy) dialRelayEarly(ctx context.Context, relayURL string, clientIP netip.Addr) *earlyRelay {
	dctx, cancel := context.WithTimeout(ctx, p.s.RelayDialTimeout)
	e := &earlyRelay{p: p, relayURL: relayURL, clientIP: clientIP, done: make(chan struct{}), cancel: cancel}
	go func() {
		e.ws, e.err = p.relay.dial(dctx, relayURL, clientIP)
		e.at = time.Now()
		close(e.done)
	}()
	return e
}

// take returns the WebSocket dialled ahead, waiting for the dial to end,
// or, if it failed or is older than earlyRelayMaxAge, a new one. The
// caller closes it.
func (e *earlyRelay) take(ctx context.Context) (*websocket.Conn, error) {
	e.taken = true
	select {
	case <-e.done:
	case <-ctx.Done():
		e.taken = false // discard closes it
		return nil, ctx.Err()
	}
	e.cancel()
	if e.err == nil && time.Since(e.at) <= earlyRelayMaxAge {
		return e.ws, nil
	}
	if e.ws != nil {
		_ = e.ws.Close()
	}
	dctx, cancel := context.WithTimeout(ctx, e.p.s.RelayDialTimeout)
	defer cancel()
	return e.p.relay.dial(dctx, e.relayURL, e.clientIP)
}

// discard ends a dial whose WebSocket was not taken (cancelling it ends
// it at once) and closes it.
func (e *earlyRelay) discard() {
	if e.taken {
		return
	}
	e.cancel()
	<-e.done
	if e.ws != nil {
		_ = e.ws.Close()
	}
}
