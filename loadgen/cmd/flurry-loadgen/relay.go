package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"time"

	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/relayload"
	"github.com/flurrypt/flurry/loadgen/report"
)

// relayOptions are the relay mode's flags.
type relayOptions struct {
	idle         relayload.RelayIdleConfig
	tp           relayload.RelayThroughputConfig
	carriers     intList
	sess         relayload.RelaySessionsConfig
	sessions     intList
	url          string
	pid          int
	serveTarget  string
	skipIdle     bool
	handshakeMax time.Duration
}

func relayFlags(fs *flag.FlagSet, c *common, stderr io.Writer) runFunc {
	o := &relayOptions{carriers: intList{relayload.DefaultIdleCarriers}}
	fs.StringVar(&o.url, "url", "ws://127.0.0.1:8000/", "relay WebSocket URL (ws:// or wss://)")
	fs.IntVar(&o.pid, "pid", 0, "the relay's process ID, for memory and CPU (Linux /proc)")
	fs.Var(&o.carriers, "carriers", "idle carriers to hold, comma-separated ascending steps (e.g. 1000,5000,10000)")
	fs.BoolVar(&o.skipIdle, "no-idle", false, "skip the idle-carrier phase")
	fs.DurationVar(&o.idle.Settle, "settle", relayload.DefaultCarrierSettle, "wait after each idle step before sampling memory")
	fs.DurationVar(&o.idle.KeepAlive, "keepalive", 0, "send a padding chunk on idle carriers this often (0: truly idle; the relay may close them after its idle timeout)")
	o.idle.SourcePrefix = wscarrier.DefaultSourcePrefix
	fs.Func("source-prefix", "IPv4 prefix idle carriers take their source addresses from in turn when the relay's address is inside it (default 127.0.0.0/8; \"none\": the system's choice)", func(s string) error {
		if s == "none" {
			o.idle.SourcePrefix = netip.Prefix{}
			return nil
		}
		p, err := netip.ParsePrefix(s)
		o.idle.SourcePrefix = p
		return err
	})
	fs.IntVar(&o.idle.DialConcurrency, "dial-concurrency", wscarrier.DefaultDialConcurrency, "concurrent WebSocket handshakes")
	fs.Var(&o.sessions, "sessions", "after the idle carriers: turbotunnel sessions to hold (carrier, KCP and smux each, the relay's target must echo), comma-separated ascending steps (e.g. 1000,10000); default none")
	fs.BoolVar(&o.sess.Active, "active-sessions", false, "with -sessions: keep one stream per session open (default: one byte echoed on a stream that is then closed)")
	fs.IntVar(&o.tp.Carriers, "throughput-carriers", relayload.DefaultThroughputCarriers, "carriers (KCP+smux sessions) for the throughput run; 0 skips it")
	fs.IntVar(&o.tp.Streams, "streams", 1, "smux streams per throughput carrier")
	fs.DurationVar(&o.tp.Duration, "duration", relayload.DefaultThroughputDuration, "measured duration of the throughput run")
	fs.StringVar(&o.tp.Mode, "mode", relayload.ModeEcho, "throughput mode: echo (relay's target echoes) or download (target is a source)")
	fs.StringVar(&o.serveTarget, "serve-target", "", "start an echo (or, with -mode download, source) target on this loopback address for the relay's -forward")
	fs.DurationVar(&o.handshakeMax, "handshake-timeout", wscarrier.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		if o.serveTarget != "" {
			t, err := o.startTarget(c, stderr)
			if err != nil {
				return err
			}
			defer func() {
				t.Close()
				s := t.Stats()
				fmt.Fprintf(stderr, "target: %d connections, %d bytes in, %d bytes out\n", s.Conns, s.BytesIn, s.BytesOut)
			}()
		}
		return o.run(ctx, c, res, progress)
	}
}

// startTarget starts the -serve-target target: an echo, or a source with
// -mode download.
func (o *relayOptions) startTarget(c *common, stderr io.Writer) (*tcptarget.Target, error) {
	mode := tcptarget.Echo
	if o.tp.Mode == relayload.ModeDownload {
		mode = tcptarget.Source
	}
	t, err := tcptarget.Start(tcptarget.Config{Addr: o.serveTarget, Mode: mode, AllowNonLoopback: c.allowNonLoopback})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "%s target listening on %s: the relay must forward there (flurry-relay -forward %s)\n", mode, t.Addr(), t.Addr())
	return t, nil
}

// run runs the idle phase, the sessions and the throughput run in turn,
// each only if asked for.
func (o *relayOptions) run(ctx context.Context, c *common, res *report.Result, progress io.Writer) error {
	idle := &o.idle
	idle.URL, idle.PID, idle.Carriers, idle.HandshakeTimeout = o.url, o.pid, o.carriers, o.handshakeMax
	idle.Insecure, idle.AllowNonLoopback = c.insecure, c.allowNonLoopback
	idle.Progress, idle.ProgressInterval = progress, c.progressInterval
	if !o.skipIdle && len(o.carriers) > 0 {
		r, err := relayload.RunRelayIdle(ctx, *idle)
		if r.URL != "" {
			res.RelayIdle = &r
		}
		if err != nil {
			return err
		}
	}
	if len(o.sessions) > 0 {
		o.sess.RelayRun, o.sess.Sessions = idle.RelayRun, o.sessions
		r, err := relayload.RunRelaySessions(ctx, o.sess)
		if r.URL != "" {
			res.RelaySessions = &r
		}
		if err != nil {
			return err
		}
	}
	if o.tp.Carriers == 0 {
		return nil
	}
	tp := &o.tp
	tp.URL, tp.PID, tp.HandshakeTimeout = o.url, o.pid, o.handshakeMax
	tp.Insecure, tp.AllowNonLoopback = c.insecure, c.allowNonLoopback
	tp.Progress, tp.ProgressInterval = progress, c.progressInterval
	r, err := relayload.RunRelayThroughput(ctx, *tp)
	if r.URL != "" {
		res.RelayThroughput = &r
	}
	return err
}
