package attack

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
)

// CarrierHoldConfig configures RunCarrierHold.
type CarrierHoldConfig struct {
	AttackTarget
	// Carriers is how many carriers to open and hold. Default
	// DefaultHoldCarriers.
	Carriers int
	// Packet, if not empty (PacketHeader, PacketNop, PacketSyn), is sent
	// after the ClientID, to hold a session as well as a carrier.
	Packet string
	// Hold is how long to hold the carriers after the last one opened.
	// Default DefaultHoldDuration.
	Hold time.Duration
	// KeepAlive, if positive, sends a padding chunk on each carrier this
	// often, against the relay's idle timeout.
	KeepAlive time.Duration
	// HandshakeTimeout bounds each WebSocket handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// carrierHold is the state of one RunCarrierHold call.
type carrierHold struct {
	cfg    CarrierHoldConfig
	u      *url.URL
	dialer *websocket.Dialer

	errs                                measure.ErrorSamples
	attempted, opened, refused, dropped atomic.Int64
	mu                                  sync.Mutex
	held                                []*websocket.Conn // guarded by mu
	readers                             sync.WaitGroup
}

// RunCarrierHold opens cfg.Carriers carriers from one address and holds
// them: the attack on the relay's connection and session budgets. It
// reports how many the relay accepted and how many it closed while held.
func RunCarrierHold(ctx context.Context, cfg CarrierHoldConfig) (AttackResult, error) {
	sc, u, err := SessionFloodConfig{
		AttackTarget: cfg.AttackTarget, Conns: cfg.Carriers, Packet: cfg.Packet, HandshakeTimeout: cfg.HandshakeTimeout,
	}.withDefaults()
	if err != nil {
		return AttackResult{}, err
	}
	if cfg.Carriers == 0 {
		sc.Conns = DefaultHoldCarriers
	}
	if cfg.Hold == 0 {
		cfg.Hold = DefaultHoldDuration
	}
	res := AttackResult{Attack: "carrier-hold", Target: u.String()}
	if _, err := measure.RaiseFileLimit(uint64(sc.Conns) + 256); err != nil {
		return res, err
	}
	mem, err := startMemWatch(cfg.PID, 250*time.Millisecond)
	if err != nil {
		return res, err
	}
	h := &carrierHold{cfg: cfg, u: u, dialer: wsDialerFrom(cfg.Source, cfg.Insecure, cfg.AllowNonLoopback, sc.HandshakeTimeout)}
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, mem.withRSS("relay", func() string {
		return fmt.Sprintf("carrier-hold: %d opened, %d refused, %d closed by the relay, %d held",
			h.opened.Load(), h.refused.Load(), h.dropped.Load(), h.opened.Load()-h.dropped.Load())
	}))
	start := time.Now()
	measure.RunPool(ctx, sc.Concurrency, sc.Conns, func() { h.openOne(ctx) })
	res.Elapsed = time.Since(start)
	measure.Say(cfg.Progress, "carrier-hold: %d carriers open after %.1f s; holding for %v", h.opened.Load()-h.dropped.Load(), res.Elapsed.Seconds(), cfg.Hold)
	peakHeld := h.hold(ctx)
	stillHeld := h.opened.Load() - h.dropped.Load()
	prog.Stop()
	h.release()
	if cfg.PID > 0 {
		measure.Say(cfg.Progress, "carrier-hold: released; watching the relay's memory for %v", sc.WatchAfter)
		sleep.For(ctx, sc.WatchAfter)
	}
	res.Memory, res.Samples = mem.finish(sc.WatchAfter)
	res.Attempted, res.Completed, res.Refused = h.attempted.Load(), h.opened.Load(), h.refused.Load()
	res.Errors = h.errs.Get()
	res.Extra = append(res.Extra,
		Figure{"first packet", orDefault(cfg.Packet, "none")},
		Figure{"carriers held at most", fmt.Sprint(peakHeld)},
		Figure{"carriers still open at the end of the hold", fmt.Sprint(stillHeld)},
		Figure{"hold", cfg.Hold.String()},
	)
	return res, ctx.Err()
}

// openOne opens a carrier, sends the first packet if there is one, and
// keeps the carrier, noticing when the relay closes it.
func (h *carrierHold) openOne(ctx context.Context) {
	h.attempted.Add(1)
	ws, err := wscarrier.DialCarrier(ctx, h.dialer, h.u, turbotunnel.NewClientID())
	if err == nil && h.cfg.Packet != "" {
		var msg bytes.Buffer
		_, _ = encapsulation.WriteData(&msg, firstPacket(h.cfg.Packet, rand.Uint32()))
		err = ws.WriteMessage(websocket.BinaryMessage, msg.Bytes())
	}
	if err != nil {
		h.refused.Add(1)
		h.errs.Add(err.Error())
		if ws != nil {
			ws.Close()
		}
		return
	}
	h.opened.Add(1)
	h.mu.Lock()
	h.held = append(h.held, ws)
	h.mu.Unlock()
	h.readers.Go(func() {
		// The relay sends nothing to a carrier without a session: a read
		// returns when it closes it (or when we do).
		for {
			if _, _, err := ws.NextReader(); err != nil {
				break
			}
		}
		h.dropped.Add(1)
	})
}

// hold keeps the carriers for Hold, with a padding chunk every KeepAlive,
// and returns how many were held at most.
func (h *carrierHold) hold(ctx context.Context) (peakHeld int64) {
	holdEnd := time.Now().Add(h.cfg.Hold)
	var pad bytes.Buffer
	_, _ = encapsulation.WritePadding(&pad, 1)
	for ctx.Err() == nil && time.Now().Before(holdEnd) {
		peakHeld = max(peakHeld, h.opened.Load()-h.dropped.Load())
		step := time.Second
		if h.cfg.KeepAlive > 0 {
			step = min(step, h.cfg.KeepAlive)
		}
		sleep.For(ctx, min(step, time.Until(holdEnd)))
		if h.cfg.KeepAlive > 0 {
			h.mu.Lock()
			for _, ws := range h.held {
				_ = ws.SetWriteDeadline(time.Now().Add(time.Second))
				_ = ws.WriteMessage(websocket.BinaryMessage, pad.Bytes())
			}
			h.mu.Unlock()
		}
	}
	return peakHeld
}

// release closes every carrier and waits for their readers.
func (h *carrierHold) release() {
	h.mu.Lock()
	for _, ws := range h.held {
		ws.Close()
	}
	h.mu.Unlock()
	h.readers.Wait()
}
