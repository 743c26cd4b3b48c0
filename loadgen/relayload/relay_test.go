package relayload

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/relay"
)

func TestRelayFake(t *testing.T) {
	for _, mode := range []string{ModeEcho, ModeDownload} {
		t.Run(mode, func(t *testing.T) {
			targetMode := tcptarget.Echo
			if mode == ModeDownload {
				targetMode = tcptarget.Source
			}
			target, err := tcptarget.Start(tcptarget.Config{Mode: targetMode})
			if err != nil {
				t.Fatal(err)
			}
			defer target.Close()
			fr := loadgentest.StartFakeRelay(t, target.Addr())
			ctx := loadgentest.Context(t)

			idleCfg := RelayIdleConfig{RelayRun: RelayRun{URL: fr.URL(), Settle: 20 * time.Millisecond}, Carriers: []int{10, 4}, KeepAlive: 10 * time.Millisecond}
			if runtime.GOOS == "linux" {
				idleCfg.PID = os.Getpid()
			}
			idle, err := RunRelayIdle(ctx, idleCfg)
			if err != nil {
				t.Fatalf("RunRelayIdle: %v (%+v)", err, idle)
			}
			if len(idle.Steps) != 2 || idle.Steps[0].Open != 4 || idle.Steps[1].Open != 10 {
				t.Fatalf("idle steps %+v", idle.Steps)
			}
			if idle.DialErrors != 0 || idle.ClosedByRelay != 0 {
				t.Fatalf("idle %+v", idle)
			}
			if got := fr.Carriers.Load(); got != 10 || fr.DistinctIDs() != 10 || fr.BadTokens.Load() != 0 {
				t.Fatalf("fake relay saw %d carriers, %d ClientIDs, %d bad tokens", got, fr.DistinctIDs(), fr.BadTokens.Load())
			}

			tp, err := RunRelayThroughput(ctx, RelayThroughputConfig{
				URL: fr.URL(), Carriers: 2, Streams: 2, Duration: time.Second, Mode: mode,
			})
			if err != nil {
				t.Fatalf("RunRelayThroughput: %v (%+v)", err, tp)
			}
			// Every stream opens; how many have had their first byte back
			// by the end depends on the machine's speed.
			if tp.StreamsConnected != 4 || tp.BytesReceived <= 0 || tp.MBPerSec <= 0 ||
				tp.TTFB.Count < 1 || tp.TTFB.Count > 4 || tp.StreamErrors != 0 {
				t.Fatalf("throughput %+v", tp)
			}
			switch mode {
			case ModeEcho:
				// Cannot receive more than was sent in total.
				if st := target.Stats(); st.BytesOut < tp.BytesReceived || tp.BytesSent <= 0 {
					t.Fatalf("echo: target %+v, run %+v", st, tp)
				}
			case ModeDownload:
				if tp.BytesSent != 0 {
					t.Fatalf("download sent %d bytes", tp.BytesSent)
				}
			}
			loadgentest.CheckReport(t, idle, idle.WriteTable, func(w io.Writer) error { return measure.WriteSVG(w, idle.Plots()) }, idleCfg.PID > 0)
			loadgentest.CheckReport(t, tp, tp.WriteTable, func(w io.Writer) error { return measure.WriteSVG(w, nil) }, false)
		})
	}
}

func TestRelayIdleNoRelay(t *testing.T) {
	// A listener that is not a WebSocket server: every dial fails.
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	res, err := RunRelayIdle(loadgentest.Context(t), RelayIdleConfig{RelayRun: RelayRun{URL: "ws" + srv.URL[4:] + "/", Settle: time.Millisecond}, Carriers: []int{3}})
	if !errors.Is(err, measure.ErrNoProgress) || res.DialErrors != 3 || len(res.ErrorSamples) == 0 {
		t.Fatalf("got %v, %+v", err, res)
	}
}

func TestRealRelay(t *testing.T) {
	target, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Echo})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	r, url := chaintest.StartRelay(t, relay.Config{ForwardAddr: target.Addr()})
	ctx := loadgentest.Context(t)
	run := RelayRun{URL: url, Settle: 20 * time.Millisecond, SourcePrefix: wscarrier.DefaultSourcePrefix}
	idle, err := RunRelayIdle(ctx, RelayIdleConfig{RelayRun: run, Carriers: []int{20}})
	if err != nil || idle.Steps[0].Open != 20 || idle.ClosedByRelay != 0 {
		t.Fatalf("RunRelayIdle: %v, %+v", err, idle)
	}
	for _, active := range []bool{false, true} {
		ss, err := RunRelaySessions(ctx, RelaySessionsConfig{RelayRun: run, Sessions: []int{3, 6}, Active: active})
		if err != nil || len(ss.Steps) != 2 || ss.Steps[1].Open != 6 || ss.Errors != 0 {
			t.Fatalf("RunRelaySessions(active %v): %v, %+v", active, err, ss)
		}
	}
	if st := r.Stats(); st.Sessions != 12 || st.Streams != 12 {
		t.Errorf("the relay saw %d sessions and %d streams, want 12 and 12", st.Sessions, st.Streams)
	}
	tp, err := RunRelayThroughput(ctx, RelayThroughputConfig{URL: url, Carriers: 2, Streams: 2, Duration: time.Second})
	if err != nil || tp.StreamsConnected != 4 || tp.BytesReceived <= 0 || tp.StreamErrors != 0 {
		t.Fatalf("RunRelayThroughput: %v, %+v", err, tp)
	}
}
