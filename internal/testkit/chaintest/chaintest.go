package chaintest

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/common/pacing"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/lossyudp"
	"github.com/flurrypt/flurry/messages"
	"github.com/flurrypt/flurry/proxy"
	"github.com/flurrypt/flurry/relay"
)

// Chain is a running echo target, relay and broker; proxies join it with
// StartProxy.
type Chain struct {
	Target    string // the echo target's address
	RelayURL  string // the relay's ws:// URL
	BrokerURL string // the broker's http:// URL
}

// Start runs an echo target, a relay forwarding to it and a broker whose
// only bridge is the relay.
func Start(tb testing.TB) *Chain {
	tb.Helper()
	ch := &Chain{Target: Echo(tb)}
	_, ch.RelayURL = StartRelay(tb, relay.Config{ForwardAddr: ch.Target})
	_, ch.BrokerURL = StartBroker(tb, broker.Config{Bridges: BridgeList(ch.RelayURL), PollInterval: time.Second})
	return ch
}

// StartProxy runs a proxy of the chain's broker and relay.
func (ch *Chain) StartProxy(tb testing.TB, name string) *Proxy {
	tb.Helper()
	return StartProxy(tb, name, ch.BrokerURL, ch.RelayURL)
}

// LogEnv names the environment variable that, set to 1, makes Logger log
// in benchmarks too.
const LogEnv = "FLURRY_TEST_LOG"

// SmokeEnv, set to 1 (make bench-smoke does), asks benchmarks for one
// short run that proves they still work, not for a measurement.
const SmokeEnv = "FLURRY_BENCH_SMOKE"

// Smoke reports whether SmokeEnv asks for a short run.
func Smoke() bool { return os.Getenv(SmokeEnv) == "1" }

// Quiet reports whether tb is a benchmark whose log would be printed
// unasked: neither -test.v nor LogEnv=1 is given. A benchmark's log is
// always printed, even when it passes.
func Quiet(tb testing.TB) bool {
	_, bench := tb.(*testing.B)
	return bench && !testing.Verbose() && os.Getenv(LogEnv) != "1"
}

// Logger logs at debug level to tb, where a test's lines are shown only
// when it fails or with -v. A benchmark's log is always printed, so in a
// benchmark Logger discards unless -test.v is given or LogEnv is 1: make
// bench-smoke stays quiet. pion runs state-change callbacks on goroutines
// of its own that may log after the test has returned; testing panics on
// such a Log, so once the test's cleanup has begun the logger drops lines
// instead.
func Logger(tb testing.TB) *slog.Logger {
	if Quiet(tb) {
		return slog.New(slog.DiscardHandler)
	}
	w := &tbWriter{tb: tb}
	tb.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type tbWriter struct {
	tb   testing.TB
	mu   sync.Mutex
	done bool
}

func (w *tbWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.tb.Helper()
		w.tb.Log(string(p))
	}
	return len(p), nil
}

// Echo runs a TCP echo server on loopback and returns its address.
func Echo(tb testing.TB) string {
	tb.Helper()
	return loopback.Accept(tb, func(c net.Conn) {
		_, _ = io.CopyBuffer(c, c, make([]byte, 16<<10))
	})
}

// StartRelay runs a relay configured by cfg (logging to tb unless cfg has
// a Logger) on a loopback listener and returns it with its ws:// URL.
func StartRelay(tb testing.TB, cfg relay.Config) (*relay.Relay, string) {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Logger(tb).With("role", "relay")
	}
	r, err := relay.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() }) // after Serve has returned
	return r, "ws://" + loopback.Serve(tb, r.Serve, relay.ErrClosed) + "/"
}

// BridgeList is a bridge list of one bridge, Snowflake's default fingerprint
// at relayURL: what a client that names no fingerprint asks for.
func BridgeList(relayURL string) []broker.Bridge {
	return []broker.Bridge{{DisplayName: "test", WebSocketAddress: relayURL, Fingerprint: messages.DefaultBridgeFingerprint}}
}

// StartBroker runs a broker configured by cfg (logging to tb unless cfg
// has a Logger) on a loopback listener and returns it with its URL.
func StartBroker(tb testing.TB, cfg broker.Config) (*broker.Broker, string) {
	tb.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Logger(tb).With("role", "broker")
	}
	b, err := broker.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return b, "http://" + loopback.Serve(tb, b.Serve) + "/"
}

// Proxy is a running proxy.Proxy that can be stopped cleanly or killed.
type Proxy struct {
	udp    *BlackholeConn
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// StartProxy runs a proxy on loopback for brokerURL and relayURL. Its
// WebRTC traffic goes through one UDP socket that Kill can silence.
func StartProxy(tb testing.TB, name, brokerURL, relayURL string) *Proxy {
	tb.Helper()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	return startProxy(tb, name, brokerURL, relayURL, udp)
}

// Path is a modelled network path between the proxy and its clients:
// ToClient applies to what the proxy sends, FromClient to what it
// receives (lossyudp.Link).
type Path struct {
	ToClient, FromClient lossyudp.Link
	Seed                 uint64 // makes the random losses repeatable
}

// StartProxyOnPath is StartProxy with the proxy's WebRTC socket behind
// path; the returned Conn counts the datagrams each way.
func StartProxyOnPath(tb testing.TB, name, brokerURL, relayURL string, path Path) (*Proxy, *lossyudp.Conn) {
	tb.Helper()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	lossy := lossyudp.Wrap(udp, path.ToClient, path.FromClient, path.Seed)
	tb.Cleanup(func() {
		_ = lossy.Close()
		lossy.Wait()
	})
	return startProxy(tb, name, brokerURL, relayURL, lossy), lossy
}

func startProxy(tb testing.TB, name, brokerURL, relayURL string, udp net.PacketConn) *Proxy {
	tb.Helper()
	p := &Proxy{udp: &BlackholeConn{PacketConn: udp}, done: make(chan struct{})}
	pacers := pacing.NewRegistry()
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: pacers.PacketConn(p.udp)})
	px, err := proxy.New(proxy.Config{
		BrokerURL:           brokerURL,
		RelayURL:            relayURL,
		AllowedRelayPattern: "^127.0.0.1:*$",
		AllowNonTLSRelay:    true,
		AllowPrivateRelay:   true,
		LoopbackOnly:        true,
		PollInterval:        200 * time.Millisecond,
		MinPollInterval:     200 * time.Millisecond,
		SummaryInterval:     -1,
		ConfigureSettingEngine: func(se *webrtc.SettingEngine) {
			se.SetICEUDPMux(mux)
		},
		Pacers: pacers,
		Logger: Logger(tb).With("role", "proxy", "name", name),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		_ = px.Run(ctx)
	}()
	tb.Cleanup(func() {
		p.Stop()
		_ = mux.Close()
		_ = udp.Close()
	})
	return p
}

// Stop shuts the proxy down cleanly: its peers see their DataChannels close.
func (p *Proxy) Stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
	})
}

// Kill makes the proxy vanish as a SIGKILLed process would: its UDP socket
// goes silent first (no DTLS or SCTP goodbye reaches the client), then it
// stops, closing its WebSocket to the relay.
func (p *Proxy) Kill() {
	p.udp.Blackhole()
	p.Stop()
}

// BlackholeConn is a UDP socket that can be made to drop everything in
// both directions, as if the process behind it had been killed.
type BlackholeConn struct {
	net.PacketConn
	dead atomic.Bool
}

// Blackhole drops every packet from now on, both ways.
func (c *BlackholeConn) Blackhole() { c.dead.Store(true) }

// Restore ends Blackhole: packets pass again.
func (c *BlackholeConn) Restore() { c.dead.Store(false) }

// ReadFrom returns the next packet that arrives before Blackhole.
func (c *BlackholeConn) ReadFrom(p []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(p)
		if err != nil || !c.dead.Load() {
			return n, addr, err
		}
	}
}

// WriteTo sends p, or after Blackhole drops it silently.
func (c *BlackholeConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if c.dead.Load() {
		return len(p), nil
	}
	return c.PacketConn.WriteTo(p, addr)
}
