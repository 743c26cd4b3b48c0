package client_test

// The whole chain in one process, with the real roles: client library →
// broker (HTTP) → proxies (WebRTC on loopback) → relay (WebSocket, KCP,
// smux) → TCP echo server. Tests may import other roles; the client package
// itself never does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/messages"
	"github.com/flurrypt/flurry/proxy"
	"github.com/flurrypt/flurry/relay"
)

// startEcho runs a TCP echo server on loopback and returns its address.
func startEcho(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]struct{}{}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns[c] = struct{}{}
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				buf := make([]byte, 16<<10)
				_, _ = io.CopyBuffer(c, c, buf)
			}()
		}
	}()
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

// startRelay runs a relay forwarding to target and returns its ws:// URL.
func startRelay(tb testing.TB, target string) string {
	tb.Helper()
	r, err := relay.New(relay.Config{ForwardAddr: target, Logger: testLogger(tb).With("role", "relay")})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = r.Serve(ctx, ln)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
		r.Close()
	})
	return "ws://" + ln.Addr().String() + "/"
}

// startBroker runs a broker whose only bridge is relayURL and returns its
// URL.
func startBroker(tb testing.TB, relayURL string) string {
	tb.Helper()
	list := filepath.Join(tb.TempDir(), "bridges.ndjson")
	line := fmt.Sprintf(`{"displayName":"test","webSocketAddress":%q,"fingerprint":%q}`+"\n", relayURL, messages.DefaultBridgeFingerprint)
	if err := os.WriteFile(list, []byte(line), 0o600); err != nil {
		tb.Fatal(err)
	}
	b, err := broker.New(broker.Config{
		BridgeListPath: list,
		PollInterval:   time.Second,
		Logger:         testLogger(tb).With("role", "broker"),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = b.Serve(ctx, ln)
	}()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return "http://" + ln.Addr().String() + "/"
}

// realProxy is a running proxy.Proxy that can be stopped cleanly or killed.
type realProxy struct {
	udp    *blackholeConn
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// startProxy runs a proxy on loopback for brokerURL and relayURL. Its
// WebRTC traffic goes through one UDP socket that Kill can silence.
func startProxy(tb testing.TB, name, brokerURL, relayURL string) *realProxy {
	tb.Helper()
	udp, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	rp := &realProxy{udp: &blackholeConn{PacketConn: udp}, done: make(chan struct{})}
	mux := ice.NewUDPMuxDefault(ice.UDPMuxParams{UDPConn: rp.udp})
	p, err := proxy.New(proxy.Config{
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
		Logger: testLogger(tb).With("role", "proxy", "name", name),
	})
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp.cancel = cancel
	go func() {
		defer close(rp.done)
		_ = p.Run(ctx)
	}()
	tb.Cleanup(func() {
		rp.Stop()
		_ = mux.Close()
		_ = udp.Close()
	})
	return rp
}

// Stop shuts the proxy down cleanly: its peers see their DataChannels close.
func (rp *realProxy) Stop() {
	rp.once.Do(func() {
		rp.cancel()
		<-rp.done
	})
}

// Kill makes the proxy vanish as a SIGKILLed process would: its UDP socket
// goes silent first (no DTLS or SCTP goodbye reaches the client), then it
// stops, closing its WebSocket to the relay.
func (rp *realProxy) Kill() {
	rp.udp.dead.Store(true)
	rp.Stop()
}

// TestChain sends transferSize bytes through the real chain, closes the
// serving proxy a third of the way in (max=1) and checks that the transfer
// completes through the second proxy with every byte once, in order.
func TestChain(t *testing.T) {
	relayURL := startRelay(t, startEcho(t))
	brokerURL := startBroker(t, relayURL)
	p1 := startProxy(t, "p1", brokerURL, relayURL)
	events := make(chan client.Event, 256)
	c := newLoopbackClient(t, brokerURL, 1, events)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitEvent(t, events, client.EventProxyConnected)
	// The second proxy starts polling only now, so that the broker
	// matched the first one.
	startProxy(t, "p2", brokerURL, relayURL)

	start := time.Now()
	res := echoTransfer(t, conn, transferSize, transferSize/3, func() {
		t.Logf("stopping p1 at %v", time.Since(start).Round(time.Millisecond))
		p1.Stop()
	})
	t.Logf("%d bytes echoed in %v; longest stall after losing the proxy: %v",
		transferSize, time.Since(start).Round(time.Millisecond), res.maxGap.Round(time.Millisecond))
	checkStall(t, res.maxGap, stallBoundReplaced)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	if st := conn.Stats(); st.ProxiesConnected < 2 {
		t.Errorf("session used %d proxies, want at least 2", st.ProxiesConnected)
	}
}

// TestChainMultipathKill runs max=2 through the real chain and kills one
// of the two serving proxies mid-transfer. The transfer must complete
// intact, with a stall under stallBoundMultipath.
func TestChainMultipathKill(t *testing.T) {
	relayURL := startRelay(t, startEcho(t))
	brokerURL := startBroker(t, relayURL)
	p1 := startProxy(t, "p1", brokerURL, relayURL)
	events := make(chan client.Event, 256)
	c := newLoopbackClient(t, brokerURL, 2, events)

	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conn, err := c.Dial(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	waitEvent(t, events, client.EventProxyConnected)
	startProxy(t, "p2", brokerURL, relayURL)
	waitEvent(t, events, client.EventProxyConnected)
	// A third proxy to replace the one that dies.
	startProxy(t, "p3", brokerURL, relayURL)

	var killedAt time.Time
	res := echoTransfer(t, conn, transferSize, transferSize/3, func() {
		killedAt = time.Now()
		p1.Kill()
	})
	t.Logf("max=2, one of two proxies killed: longest stall %v (transfer of %d bytes)", res.maxGap.Round(time.Millisecond), transferSize)
	checkStall(t, res.maxGap, stallBoundMultipath)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	e := waitEvent(t, events, client.EventProxyLost)
	t.Logf("dead proxy dropped %v after the kill: %v", e.Time.Sub(killedAt).Round(time.Millisecond), e.Err)
	if e.Err == nil || errors.Is(e.Err, context.Canceled) {
		t.Errorf("proxy lost with reason %v", e.Err)
	}
}
