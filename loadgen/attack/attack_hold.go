package attack

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
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
	d := wsDialerFrom(cfg.Source, cfg.Insecure, cfg.AllowNonLoopback, sc.HandshakeTimeout)
	var (
		errs                                measure.ErrorSamples
		attempted, opened, refused, dropped atomic.Int64
		mu                                  sync.Mutex
		held                                []*websocket.Conn
		readers                             sync.WaitGroup
	)
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, mem.withRSS("relay", func() string {
		return fmt.Sprintf("carrier-hold: %d opened, %d refused, %d closed by the relay, %d held",
			opened.Load(), refused.Load(), dropped.Load(), opened.Load()-dropped.Load())
	}))
	start := time.Now()
	measure.RunPool(ctx, sc.Concurrency, sc.Conns, func() {
		attempted.Add(1)
		ws, err := wscarrier.DialCarrier(ctx, d, u, turbotunnel.NewClientID())
		if err == nil && cfg.Packet != "" {
			var msg bytes.Buffer
			_, _ = encapsulation.WriteData(&msg, firstPacket(cfg.Packet, rand.Uint32()))
			err = ws.WriteMessage(websocket.BinaryMessage, msg.Bytes())
		}
		if err != nil {
			refused.Add(1)
			errs.Add(err.Error())
			if ws != nil {
				ws.Close()
			}
			return
		}
		opened.Add(1)
		mu.Lock()
		held = append(held, ws)
		mu.Unlock()
		readers.Add(1)
		go func() {
			// The relay sends nothing to a carrier without a
			// session: a read returns when it closes it (or
			// when we do).
			defer readers.Done()
			for {
				if _, _, err := ws.NextReader(); err != nil {
					break
				}
			}
			dropped.Add(1)
		}()
	})
	res.Elapsed = time.Since(start)
	measure.Say(cfg.Progress, "carrier-hold: %d carriers open after %.1f s; holding for %v", opened.Load()-dropped.Load(), res.Elapsed.Seconds(), cfg.Hold)
	var peakHeld int64
	holdEnd := time.Now().Add(cfg.Hold)
	var pad bytes.Buffer
	_, _ = encapsulation.WritePadding(&pad, 1)
	for ctx.Err() == nil && time.Now().Before(holdEnd) {
		peakHeld = max(peakHeld, opened.Load()-dropped.Load())
		step := time.Second
		if cfg.KeepAlive > 0 {
			step = min(step, cfg.KeepAlive)
		}
		sleep.For(ctx, min(step, time.Until(holdEnd)))
		if cfg.KeepAlive > 0 {
			mu.Lock()
			for _, ws := range held {
				_ = ws.SetWriteDeadline(time.Now().Add(time.Second))
				_ = ws.WriteMessage(websocket.BinaryMessage, pad.Bytes())
			}
			mu.Unlock()
		}
	}
	stillHeld := opened.Load() - dropped.Load()
	prog.Stop()
	mu.Lock()
	for _, ws := range held {
		ws.Close()
	}
	mu.Unlock()
	readers.Wait()
	if cfg.PID > 0 {
		measure.Say(cfg.Progress, "carrier-hold: released; watching the relay's memory for %v", sc.WatchAfter)
		sleep.For(ctx, sc.WatchAfter)
	}
	res.Memory, res.Samples = mem.finish(sc.WatchAfter)
	res.Attempted, res.Completed, res.Refused = attempted.Load(), opened.Load(), refused.Load()
	res.Errors = errs.Get()
	res.Extra = append(res.Extra,
		Figure{"first packet", orDefault(cfg.Packet, "none")},
		Figure{"carriers held at most", fmt.Sprint(peakHeld)},
		Figure{"carriers still open at the end of the hold", fmt.Sprint(stillHeld)},
		Figure{"hold", cfg.Hold.String()},
	)
	return res, ctx.Err()
}
