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
	"testing"
	"time"

	"github.com/xtaci/kcp-go/v5"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/relay"
)

// dialChain starts the real chain with one proxy and dials a loopback
// client with max proxies, whose session is closed when the test ends; it
// returns once the proxy is connected.
func dialChain(t *testing.T, max int) (*chaintest.Chain, *chaintest.Proxy, chan client.Event, *client.Conn) {
	t.Helper()
	ch := chaintest.Start(t)
	p1 := ch.StartProxy(t, "p1")
	events := make(chan client.Event, 256)
	conn := dial(t, newLoopbackClient(t, ch.BrokerURL, max, events))
	t.Cleanup(func() { conn.Close() })
	waitEvent(t, events, client.EventProxyConnected)
	return ch, p1, events, conn
}

// TestChain sends transferSize bytes through the real chain, closes the
// serving proxy a third of the way in (max=1) and checks that the transfer
// completes through the second proxy with every byte once, in order.
func TestChain(t *testing.T) {
	ch, p1, _, conn := dialChain(t, 1)
	// The second proxy starts polling only now, so that the broker
	// matched the first one.
	ch.StartProxy(t, "p2")

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
	ch, p1, events, conn := dialChain(t, 2)
	ch.StartProxy(t, "p2")
	waitEvent(t, events, client.EventProxyConnected)
	// A third proxy to replace the one that dies.
	ch.StartProxy(t, "p3")

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

// TestChainCloseLeavesNothing closes a session right after an echo through
// the real relay and checks that the client left cleanly: the relay's
// stream ends (the client's FIN arrived and the relay's was acknowledged)
// and the relay's KCP retransmits nothing afterwards (every segment it
// sent was acknowledged before the client's KCP stopped). A client that
// vanished would leave the relay retransmitting for minutes.
func TestChainCloseLeavesNothing(t *testing.T) {
	target := chaintest.Echo(t)
	r, relayURL := chaintest.StartRelay(t, relay.Config{ForwardAddr: target})
	_, brokerURL := chaintest.StartBroker(t, broker.Config{Bridges: chaintest.BridgeList(relayURL), PollInterval: time.Second})
	chaintest.StartProxy(t, "p1", brokerURL, relayURL)
	c := newLoopbackClient(t, brokerURL, 1, nil)

	for i := range 2 {
		conn := dial(t, c)
		checkEcho(t, conn, 1<<20)
		closeAndWatch(t, conn, fmt.Sprint("session ", i), true)
		waitFor(t, "the relay's stream to end", func() bool { return r.Stats().ActiveStreams == 0 })
	}
}

// TestChainCloseMidDownload closes a session in the middle of a download
// from a target that never stops sending nor reads (as the side-by-side
// benchmark's source): the relay's stream stays blocked on smux's window
// until the relay gives up on the session, so no FIN comes and Close
// lingers to its bound, but the relay's KCP must have nothing left to
// retransmit.
func TestChainCloseMidDownload(t *testing.T) {
	target := loopback.Accept(t, func(c net.Conn) {
		buf := make([]byte, 32<<10)
		for {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
	_, relayURL := chaintest.StartRelay(t, relay.Config{ForwardAddr: target})
	_, brokerURL := chaintest.StartBroker(t, broker.Config{Bridges: chaintest.BridgeList(relayURL), PollInterval: time.Second})
	chaintest.StartProxy(t, "p1", brokerURL, relayURL)
	c := newLoopbackClient(t, brokerURL, 1, nil)
	conn := dial(t, c)
	if _, err := io.CopyN(io.Discard, conn, 4<<20); err != nil {
		t.Fatal(err)
	}
	closeAndWatch(t, conn, "mid-download", false)
}

// closeAndWatch closes conn (timedClose) and checks that the relay's KCP
// retransmits nothing for retransmitWatch after (the test's only KCP
// sessions are the client's, closed, and the relay's). relayCloses says
// whether the relay's stream ends (its target closes), so that Close
// should end before the linger runs out.
func closeAndWatch(tb testing.TB, conn *client.Conn, name string, relayCloses bool) {
	tb.Helper()
	if took := timedClose(tb, conn, name); relayCloses && took >= client.CloseLinger {
		// On a very loaded machine the relay's FIN may not have come
		// within the linger; what it still had in flight is lost to it.
		tb.Logf("%s: the linger ran out; not watching for retransmissions", name)
		return
	}
	if raceEnabled {
		// The chain runs many times slower: the last acknowledgement can
		// still be on its way through the proxy when the quiet period
		// ends, and the relay's keep-alives fall into the watch.
		tb.Logf("%s: race detector on; not watching for retransmissions", name)
		return
	}
	before := kcp.DefaultSnmp.Copy().RetransSegs
	time.Sleep(retransmitWatch)
	if n := kcp.DefaultSnmp.Copy().RetransSegs - before; n > 0 {
		tb.Errorf("%s: the relay retransmitted %d segments in the %v after the client closed", name, n, retransmitWatch)
	}
}

// timedClose closes conn, checks that Close returned within closeBound
// and returns how long it took.
func timedClose(tb testing.TB, conn *client.Conn, name string) time.Duration {
	tb.Helper()
	start := time.Now()
	err := conn.Close()
	took := time.Since(start)
	tb.Logf("%s: Close took %v (%v)", name, took.Round(time.Millisecond), err)
	if took > closeBound {
		tb.Errorf("%s: Close took %v, want under %v", name, took.Round(time.Millisecond), closeBound)
	}
	return took
}

// TestChainCloseDeadProxy closes a session whose only proxy was just
// killed: nothing will acknowledge the FIN, and Close must still return
// (the linger is bounded).
func TestChainCloseDeadProxy(t *testing.T) {
	_, p1, _, conn := dialChain(t, 1)
	checkEcho(t, conn, 1<<20)
	p1.Kill()
	timedClose(t, conn, "dead proxy")
}

// closeBound is far above the client's close linger (a few hundred
// milliseconds here, client.CloseLinger at most), to catch a Close that waits for timeouts it should
// not. retransmitWatch is several of the relay's KCP retransmission
// timeouts on loopback (100 ms and more).
const (
	closeBound      = 5 * time.Second
	retransmitWatch = 3 * time.Second
)

// waitFor polls cond until it holds, failing the test after hangGuard.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
