package client_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
)

// hangGuard bounds how long a chain test may block; nothing is
// synchronised on it.
const hangGuard = 90 * time.Second

// transferSize is how much each chain test echoes: 20 MB, as issue 7 asks,
// also under the race detector (about 6 to 10 s per test there).
const transferSize = 20 << 20

// Failover stall bounds, asserted by the failover tests: far above what
// they measure (docs/client.md) and well under the timeouts that would
// otherwise end the stall. Without failover, a lost proxy is noticed by the
// 20 s idle timeout (Snowflake's), then replaced through a rendezvous.
const (
	idleTimeout = 20 * time.Second
	// stallBoundReplaced: max=1, the proxy closes; a new rendezvous is on
	// the critical path.
	stallBoundReplaced = idleTimeout / 2
	// stallBoundStalled: max=1, the proxy stays up but forwards nothing;
	// the reply watch (2 s and more, following KCP's retransmission
	// timeout) drops it, then a rendezvous.
	stallBoundStalled = 3 * idleTimeout / 4
	// stallBoundMultipath: max=2, one proxy dies; the other carries the
	// retransmissions at once, without waiting for the dead one to be
	// dropped (1 s of ICE silence) or replaced. Measured 0.1–0.3 s on an
	// idle machine and up to 1.7 s at a load average of 30 on two cores.
	stallBoundMultipath = idleTimeout / 4
)

// checkStall fails the test if the stream stalled longer than bound.
func checkStall(tb testing.TB, got, bound time.Duration) {
	tb.Helper()
	if got >= bound {
		tb.Errorf("the stream stalled %v after losing a proxy, want under %v", got.Round(time.Millisecond), bound)
	}
}

// transferResult is what echoTransfer measured.
type transferResult struct {
	sent, received [32]byte
	// maxGap is the longest wait between two reads after the mark
	// (longest stall after the proxy was lost).
	maxGap time.Duration
}

// echoTransfer writes size pseudo-random bytes to conn while reading the
// echo back, and returns both digests. When the reader has received
// markAt bytes it calls mark (once) and from then on measures the gaps
// between reads.
func echoTransfer(tb testing.TB, conn net.Conn, size, markAt int, mark func()) transferResult {
	tb.Helper()
	if err := conn.SetDeadline(time.Now().Add(hangGuard)); err != nil {
		tb.Fatal(err)
	}
	var res transferResult
	var wg sync.WaitGroup
	var writeErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		src := rand.NewChaCha8([32]byte{1, 2, 3})
		h := sha256.New()
		buf := make([]byte, 32<<10)
		for left := size; left > 0; {
			n := min(left, len(buf))
			_, _ = src.Read(buf[:n])
			h.Write(buf[:n])
			if _, err := conn.Write(buf[:n]); err != nil {
				writeErr = err
				return
			}
			left -= n
		}
		copy(res.sent[:], h.Sum(nil))
	}()

	h := sha256.New()
	buf := make([]byte, 32<<10)
	got := 0
	marked := false
	var last time.Time
	for got < size {
		n, err := conn.Read(buf[:min(len(buf), size-got)])
		now := time.Now()
		if n > 0 {
			h.Write(buf[:n])
			got += n
			if marked {
				res.maxGap = max(res.maxGap, now.Sub(last))
			}
			last = now
			if !marked && got >= markAt && mark != nil {
				marked = true
				mark()
				last = time.Now()
			}
		}
		if err != nil {
			wg.Wait()
			tb.Fatalf("read after %d of %d bytes: %v", got, size, err)
		}
	}
	wg.Wait()
	if writeErr != nil {
		tb.Fatalf("write: %v", writeErr)
	}
	copy(res.received[:], h.Sum(nil))
	return res
}

// dial opens a session of c, failing the test if that takes hangGuard.
func dial(tb testing.TB, c *client.Client) *client.Conn {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	conn, err := c.Dial(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	return conn
}

// checkEcho echoes size pseudo-random bytes over conn and fails the test
// unless every byte comes back once, in order.
func checkEcho(tb testing.TB, conn net.Conn, size int) {
	tb.Helper()
	if res := echoTransfer(tb, conn, size, size, nil); res.sent != res.received {
		tb.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
}

// waitEvent returns the next event of the given kind (of any kind if 0), or
// fails the test.
func waitEvent(tb testing.TB, events <-chan client.Event, kind client.EventKind) client.Event {
	tb.Helper()
	timeout := time.NewTimer(hangGuard)
	defer timeout.Stop()
	for {
		select {
		case e := <-events:
			if !chaintest.Quiet(tb) {
				tb.Logf("event: %v", e)
			}
			if kind == 0 || e.Kind == kind {
				return e
			}
		case <-timeout.C:
			tb.Fatalf("no %v event", kind)
		}
	}
}

// newLoopbackClient returns a client of the given broker, restricted to
// loopback; tweaks change its Config.
func newLoopbackClient(tb testing.TB, brokerURL string, maxProxies int, events chan client.Event, tweaks ...func(*client.Config)) *client.Client {
	tb.Helper()
	cfg := client.Config{
		BrokerURL:    brokerURL,
		LoopbackOnly: true,
		Max:          maxProxies,
		Events:       events,
		Logger:       chaintest.Logger(tb),
		RetryMin:     100 * time.Millisecond,
	}
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

// TestInProcessEcho sends transferSize bytes through client → test broker →
// test proxy → test relay → echo and checks every byte comes back.
func TestInProcessEcho(t *testing.T) {
	relay := startTestRelay(t)
	p1 := newTestProxy(t, "p1", relay)
	broker := startTestBroker(t, p1)
	c := newLoopbackClient(t, broker.URL(), 1, nil)

	conn := dial(t, c)
	defer conn.Close()
	start := time.Now()
	res := echoTransfer(t, conn, transferSize, transferSize, nil)
	t.Logf("%d bytes echoed in %v; session stats %+v", transferSize, time.Since(start), conn.Stats())
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
}

// inProcessChain is a dialed session over test proxies.
type inProcessChain struct {
	proxies []*testProxy
	events  chan client.Event
	conn    *client.Conn
}

// dialInProcess starts a test relay, nProxies test proxies and a test
// broker, dials a loopback client with max proxies (its Config changed by
// tweaks) and waits until max proxies are connected. The session is closed
// when the test ends.
func dialInProcess(t *testing.T, nProxies, max int, tweaks ...func(*client.Config)) *inProcessChain {
	t.Helper()
	relay := startTestRelay(t)
	ch := &inProcessChain{events: make(chan client.Event, 256)}
	for i := range nProxies {
		ch.proxies = append(ch.proxies, newTestProxy(t, fmt.Sprintf("p%d", i+1), relay))
	}
	broker := startTestBroker(t, ch.proxies...)
	c := newLoopbackClient(t, broker.URL(), max, ch.events, tweaks...)
	conn := dial(t, c)
	t.Cleanup(func() { conn.Close() })
	for range max {
		waitEvent(t, ch.events, client.EventProxyConnected)
	}
	ch.conn = conn
	return ch
}

// TestInProcessFailover closes the serving proxy a third of the way into
// the transfer (max=1): the session must move to the second proxy through
// a new rendezvous, and the transfer must complete with every byte once,
// in order.
func TestInProcessFailover(t *testing.T) {
	ch := dialInProcess(t, 2, 1)
	p1, p2, conn, events := ch.proxies[0], ch.proxies[1], ch.conn, ch.events

	res := echoTransfer(t, conn, transferSize, transferSize/3, func() {
		if p1.served.Load() != 1 || p2.served.Load() != 0 {
			t.Errorf("p1 served %d, p2 served %d before the failover", p1.served.Load(), p2.served.Load())
		}
		t.Logf("closing p1 at %v", time.Now().Format("15:04:05.000"))
		p1.CloseGracefully()
	})
	t.Logf("longest stall after closing the proxy: %v", res.maxGap)
	checkStall(t, res.maxGap, stallBoundReplaced)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	if p2.served.Load() != 1 {
		t.Errorf("p2 served %d DataChannels, want 1", p2.served.Load())
	}
	if st := conn.Stats(); st.ProxiesConnected != 2 || st.Resends != 1 {
		t.Errorf("session used %d proxies and resent %d times, want 2 and 1 (the proxy after none)", st.ProxiesConnected, st.Resends)
	}
	e := waitEvent(t, events, client.EventProxyLost)
	if e.Err == nil {
		t.Error("proxy lost without a reason")
	}
}

// TestInProcessMultipathKill runs max=2 over two proxies and kills one
// silently (it drops every packet, as a SIGKILLed process would) in the
// middle of the transfer. The transfer must complete intact; the longest
// stall must stay under stallBoundMultipath.
func TestInProcessMultipathKill(t *testing.T) {
	ch := dialInProcess(t, 3, 2)
	p1, conn, events := ch.proxies[0], ch.conn, ch.events

	var killedAt time.Time
	res := echoTransfer(t, conn, transferSize, transferSize/3, func() {
		killedAt = time.Now()
		t.Logf("killing p1 at %v", killedAt.Format("15:04:05.000"))
		p1.Kill()
	})
	t.Logf("max=2, one proxy killed: longest stall %v (transfer of %d bytes)", res.maxGap, transferSize)
	checkStall(t, res.maxGap, stallBoundMultipath)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	e := waitEvent(t, events, client.EventProxyLost)
	t.Logf("dead proxy noticed %v after the kill: %v", e.Time.Sub(killedAt).Round(time.Millisecond), e.Err)
	if st := conn.Stats(); st.Resends < 1 {
		t.Errorf("resent %d times after losing one of two proxies, want at least 1", st.Resends)
	}
}

// TestInProcessStandbyKill runs max=1 with a standby over three proxies
// and kills the first silently in the middle of the transfer. The
// transfer completes intact, within the bound of max=2 (the other proxy
// was connected already), and the session collects a new standby. The
// test relay sends through every carrier, as Snowflake's server does, so
// the standby takes over now and then whether or not a proxy dies.
func TestInProcessStandbyKill(t *testing.T) {
	ch := dialInProcess(t, 3, 1, func(cfg *client.Config) { cfg.Standby = true })
	p1, conn, events := ch.proxies[0], ch.conn, ch.events
	waitEvent(t, events, client.EventProxyConnected) // the standby

	res := echoTransfer(t, conn, transferSize, transferSize/3, func() { p1.Kill() })
	t.Logf("max=1 and a standby, one proxy killed: longest stall %v", res.maxGap)
	checkStall(t, res.maxGap, stallBoundMultipath)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	waitEvent(t, events, client.EventProxyLost)
	// The next standby may have connected before the loss (quiet).
	for deadline := time.Now().Add(idleTimeout); ; time.Sleep(10 * time.Millisecond) {
		st := conn.Stats()
		if st.ProxiesConnected == 3 && st.Proxies == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("session used %d proxies and holds %d, want 3 and 2", st.ProxiesConnected, st.Proxies)
		}
	}
}

// TestInProcessStalledProxy stalls the serving proxy (max=1) a third of
// the way into the transfer: its DataChannel stays open and ICE stays
// alive, but nothing passes. The reply watch must drop it with ErrNoReply
// (well before the 20 s idle timeout) and the transfer must complete over
// the next proxy.
func TestInProcessStalledProxy(t *testing.T) {
	ch := dialInProcess(t, 2, 1)
	p1, p2, conn, events := ch.proxies[0], ch.proxies[1], ch.conn, ch.events

	var stalledAt time.Time
	res := echoTransfer(t, conn, transferSize, transferSize/3, func() {
		stalledAt = time.Now()
		p1.Stall()
	})
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	e := waitEvent(t, events, client.EventProxyLost)
	t.Logf("stalled proxy dropped %v after the stall (%v); longest stall of the stream %v",
		e.Time.Sub(stalledAt).Round(time.Millisecond), e.Err, res.maxGap)
	checkStall(t, res.maxGap, stallBoundStalled)
	if !errors.Is(e.Err, client.ErrNoReply) {
		t.Errorf("proxy lost for %v, want ErrNoReply", e.Err)
	}
	if p2.served.Load() != 1 {
		t.Errorf("p2 served %d DataChannels, want 1", p2.served.Load())
	}
}

// slowDeadPeer gives the quiet tests a dead-peer timeout d, long enough
// that a loopback rendezvous fits in its second half even on a loaded
// machine, and a reply timeout that does not drop a silent proxy first.
func slowDeadPeer(d time.Duration) func(*client.Config) {
	return func(cfg *client.Config) {
		cfg.DeadPeerTimeout = d
		cfg.ReplyTimeout = 3 * idleTimeout / 4
	}
}

// TestInProcessQuietProxyReplaced kills the serving proxy silently (max=1)
// in the middle of the transfer: its replacement must be collected while
// the dead proxy is only quiet, and connect before it is dropped.
func TestInProcessQuietProxyReplaced(t *testing.T) {
	ch := dialInProcess(t, 2, 1, slowDeadPeer(8*time.Second))
	p1, p2, conn, events := ch.proxies[0], ch.proxies[1], ch.conn, ch.events

	res := echoTransfer(t, conn, transferSize, transferSize/3, p1.Kill)
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	connected := waitEvent(t, events, client.EventProxyConnected)
	lost := waitEvent(t, events, client.EventProxyLost)
	t.Logf("replacement connected %v before the dead proxy was dropped (%v); longest stall %v",
		lost.Time.Sub(connected.Time).Round(time.Millisecond), lost.Err, res.maxGap)
	if lost.Peer == connected.Peer {
		t.Errorf("the replacement %s was lost", lost.Peer)
	}
	if p2.served.Load() != 1 {
		t.Errorf("p2 served %d DataChannels, want 1", p2.served.Load())
	}
	if st := conn.Stats(); st.Proxies != 1 || st.Resends < 1 {
		t.Errorf("session holds %d proxies and resent %d times, want 1 and at least 1", st.Proxies, st.Resends)
	}
}

// TestQuietProxyHeardAgain silences the proxy (max=1) right after data
// came through it, until its replacement has connected, then lets it be
// heard again before the dead-peer timeout (its keepalive interval, a
// quarter of that, leaves a quarter to spare): the session must close the
// old one (ErrReplaced), keep one proxy, and carry data. Nothing is sent
// meanwhile, so that no other rule drops the silent proxy.
func TestQuietProxyHeardAgain(t *testing.T) {
	ch := dialInProcess(t, 2, 1, slowDeadPeer(8*time.Second))
	p1, conn, events := ch.proxies[0], ch.conn, ch.events

	checkEcho(t, conn, 64<<10)
	p1.udp.Blackhole()
	replacement := waitEvent(t, events, client.EventProxyConnected)
	p1.udp.Restore()
	lost := waitEvent(t, events, client.EventProxyLost)
	if !errors.Is(lost.Err, client.ErrReplaced) || lost.Peer == replacement.Peer {
		t.Fatalf("lost %s for %v, want the first proxy for ErrReplaced", lost.Peer, lost.Err)
	}
	checkEcho(t, conn, 1<<20)
	if st := conn.Stats(); st.Proxies != 1 {
		t.Errorf("session holds %d proxies, want 1", st.Proxies)
	}
}

// TestIdleSessionNotQuiet silences the proxy of a session that has carried
// nothing for a while (max=1): silences between an idle session's
// keepalives are no sign, so the replacement is collected only once the
// proxy is dropped.
func TestIdleSessionNotQuiet(t *testing.T) {
	deadPeer := 4 * time.Second
	ch := dialInProcess(t, 2, 1, slowDeadPeer(deadPeer))
	p1, conn, events := ch.proxies[0], ch.conn, ch.events

	time.Sleep(deadPeer) // no data for that long: idle
	p1.udp.Blackhole()
	for e := waitEvent(t, events, 0); e.Kind != client.EventProxyLost; e = waitEvent(t, events, 0) {
		if e.Kind == client.EventOfferCreated {
			t.Fatalf("replacement sought before the proxy was lost: %v", e)
		}
	}
	waitEvent(t, events, client.EventProxyConnected)
	checkEcho(t, conn, 64<<10)
}

// TestIdleProxyDropped: a proxy that keeps its DataChannel and ICE alive
// but from which nothing arrives is dropped for ErrIdle after
// Config.IdleTimeout (20 s by default; shortened here), also when the
// session sends nothing either (so the reply watch has nothing to wait
// for).
func TestIdleProxyDropped(t *testing.T) {
	relay := startTestRelay(t)
	p1 := newTestProxy(t, "p1", relay)
	broker := startTestBroker(t, p1)
	events := make(chan client.Event, 64)
	c, err := client.New(client.Config{
		BrokerURL:    broker.URL(),
		LoopbackOnly: true,
		Events:       events,
		Logger:       chaintest.Logger(t),
		IdleTimeout:  time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := dial(t, c)
	defer conn.Close()
	waitEvent(t, events, client.EventProxyConnected)
	p1.Stall()
	if e := waitEvent(t, events, client.EventProxyLost); !errors.Is(e.Err, client.ErrIdle) {
		t.Errorf("proxy lost for %v, want ErrIdle", e.Err)
	}
}

func TestDialContextEnds(t *testing.T) {
	relay := startTestRelay(t)
	p1 := newTestProxy(t, "p1", relay)
	p1.Kill() // the broker skips it: "no proxies"
	broker := startTestBroker(t, p1)
	c := newLoopbackClient(t, broker.URL(), 1, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := c.Dial(ctx)
	if !errors.Is(err, client.ErrNoProxy) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial = %v, want ErrNoProxy and DeadlineExceeded", err)
	}
	if !errors.Is(err, client.ErrBroker) {
		t.Errorf("Dial error %v does not carry the broker's error", err)
	}
}

// TestNATPolicy checks Snowflake's policy: with the NAT type unknown (no
// STUN server) the client claims "unrestricted" until a DataChannel fails
// to open, and sends "unknown" from then on.
func TestNATPolicy(t *testing.T) {
	relay := startTestRelay(t)
	dead := newTestProxy(t, "dead", relay)
	dead.Blackhole() // answers offers, but no packet gets through
	good := newTestProxy(t, "good", relay)
	broker := startTestBroker(t, dead, good)
	events := make(chan client.Event, 64)
	c, err := client.New(client.Config{
		BrokerURL:          broker.URL(),
		LoopbackOnly:       true,
		DataChannelTimeout: 3 * time.Second, // far above the good proxy's time to open
		RetryMin:           10 * time.Millisecond,
		Events:             events,
		Logger:             chaintest.Logger(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	conn := dial(t, c)
	defer conn.Close()
	failed := waitEvent(t, events, client.EventProxyFailed)
	if failed.Err == nil {
		t.Error("failure without a reason")
	}
	if got := broker.NATs(); len(got) != 2 || got[0] != "unrestricted" || got[1] != "unknown" {
		t.Errorf("NAT types sent: %q, want [unrestricted unknown]", got)
	}
	if c.NATType() != "unknown" {
		t.Errorf("NATType = %q", c.NATType())
	}
}

// BenchmarkInProcessEcho measures echo throughput through one session over
// the in-test proxy and relay on loopback (WebRTC, KCP and smux included).
func BenchmarkInProcessEcho(b *testing.B) {
	for _, maxProxies := range []int{1, 2} {
		b.Run(fmt.Sprintf("max=%d", maxProxies), func(b *testing.B) {
			relay := startTestRelay(b)
			broker := startTestBroker(b, newTestProxy(b, "p1", relay), newTestProxy(b, "p2", relay))
			events := make(chan client.Event, 64)
			c := newLoopbackClient(b, broker.URL(), maxProxies, events)
			conn := dial(b, c)
			defer conn.Close()
			for range maxProxies {
				waitEvent(b, events, client.EventProxyConnected)
			}
			const chunk = 1 << 20
			b.SetBytes(chunk)
			b.ReportAllocs()
			for b.Loop() {
				checkEcho(b, conn, chunk)
			}
		})
	}
}
