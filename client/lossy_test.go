package client_test

// Downloads through the real chain with the proxy's WebRTC socket behind a
// modelled path (internal/testkit/chaintest/lossyudp): delay, random loss, a
// rate-limited bottleneck. The test checks that a download over a lossy
// path arrives intact; the benchmark measures what each path carries
// (docs/performance.md, "Long and lossy paths").

import (
	"crypto/sha256"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/xtaci/kcp-go/v5"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/loopback"
	"github.com/flurrypt/flurry/internal/testkit/chaintest/lossyudp"
	"github.com/flurrypt/flurry/relay"
)

var lossySizeMiB = flag.Int("lossy.mib", 0, "MiB per download in BenchmarkLossyDownload (0: each path's default)")

// lossyPath is a path between the client and the proxy, the same both ways
// unless rate is set, which limits the proxy-to-client direction only.
type lossyPath struct {
	name    string
	rtt     time.Duration
	loss    float64 // each way
	rate    int64   // bytes/s towards the client, 0 for none
	sizeMiB int     // the benchmark's default download
}

// lossyPaths are issue 25's paths: a Wi-Fi-like one (20 ms, 0.5 % loss), an
// intercontinental one with and without 1 % loss, a 5 Mbit/s bottleneck
// with a 50 ms drop-tail queue, and the network lab's mobile profile
// without its jitter (300 ms, 3 % loss, the same bottleneck).
var lossyPaths = []lossyPath{
	{name: "rtt=20ms,loss=0.5%", rtt: 20 * time.Millisecond, loss: 0.005, sizeMiB: 16},
	{name: "rtt=150ms,loss=0", rtt: 150 * time.Millisecond, sizeMiB: 16},
	{name: "rtt=150ms,loss=1%", rtt: 150 * time.Millisecond, loss: 0.01, sizeMiB: 4},
	{name: "rtt=20ms,5Mbit/s", rtt: 20 * time.Millisecond, rate: 5e6 / 8, sizeMiB: 4},
	{name: "rtt=300ms,loss=3%,5Mbit/s", rtt: 300 * time.Millisecond, loss: 0.03, rate: 5e6 / 8, sizeMiB: 2},
}

func (p lossyPath) chainPath(seed uint64) chaintest.Path {
	l := lossyudp.Link{Delay: p.rtt / 2, Loss: p.loss}
	to := l
	to.Rate = p.rate
	return chaintest.Path{ToClient: to, FromClient: l, Seed: seed}
}

// downloadSource is a target that sends size pseudo-random bytes (seeded
// by seed) to every connection and then closes it.
func downloadSource(tb testing.TB, size int64, seed uint64) string {
	return loopback.Accept(tb, func(c net.Conn) {
		defer c.Close()
		_, _ = io.CopyBuffer(c, io.LimitReader(rand.NewChaCha8(seedBytes(seed)), size), make([]byte, 32<<10))
	})
}

func seedBytes(seed uint64) [32]byte {
	var s [32]byte
	for i := range 8 {
		s[i] = byte(seed >> (8 * i))
	}
	return s
}

// lossyChain starts a chain whose target is downloadSource and whose one
// proxy sits behind path, and returns its relay, the proxy's socket and a
// dialer of a client through it.
func lossyChain(tb testing.TB, path chaintest.Path, size int64, seed uint64) (*relay.Relay, *lossyudp.Conn, func() net.Conn) {
	tb.Helper()
	ch := &chaintest.Chain{Target: downloadSource(tb, size, seed)}
	r, relayURL := chaintest.StartRelay(tb, relay.Config{ForwardAddr: ch.Target})
	ch.RelayURL = relayURL
	_, ch.BrokerURL = chaintest.StartBroker(tb, broker.Config{Bridges: chaintest.BridgeList(ch.RelayURL), PollInterval: time.Second})
	_, udp := chaintest.StartProxyOnPath(tb, "p1", ch.BrokerURL, ch.RelayURL, path)
	c := newLoopbackClient(tb, ch.BrokerURL, 1, nil)
	return r, udp, func() net.Conn { return dial(tb, c) }
}

// download reads size bytes from conn and fails the test unless they are
// the source's bytes for seed.
func download(tb testing.TB, conn net.Conn, size int64, seed uint64) {
	tb.Helper()
	if err := conn.SetDeadline(time.Now().Add(5 * hangGuard)); err != nil {
		tb.Fatal(err)
	}
	got := sha256.New()
	n, err := io.Copy(got, io.LimitReader(conn, size))
	if err != nil || n != size {
		tb.Fatalf("downloaded %d of %d bytes: %v", n, size, err)
	}
	want := sha256.New()
	_, _ = io.Copy(want, io.LimitReader(rand.NewChaCha8(seedBytes(seed)), size))
	if string(got.Sum(nil)) != string(want.Sum(nil)) {
		tb.Fatal("downloaded bytes differ from the source's")
	}
}

// TestChainLossyDownload downloads through a proxy on a path that loses
// datagrams both ways: every byte must arrive once, in order.
func TestChainLossyDownload(t *testing.T) {
	const size = 2 << 20
	path := lossyPath{rtt: 20 * time.Millisecond, loss: 0.02}.chainPath(1)
	_, udp, dialer := lossyChain(t, path, size, 7)
	conn := dialer()
	defer conn.Close()
	start := time.Now()
	download(t, conn, size, 7)
	out, in := udp.OutStats(), udp.InStats()
	t.Logf("%d bytes in %v; proxy sent %d datagrams (%d lost), received %d (%d lost)",
		size, time.Since(start).Round(time.Millisecond), out.Sent, out.Lost, in.Sent, in.Lost)
	if out.Lost == 0 {
		t.Error("the path lost nothing towards the client")
	}
}

// BenchmarkLossyDownload measures downloads through the chain on each of
// lossyPaths. MB/s is the download's bytes over the time from the stream's
// opening to its last byte; drops counts the bottleneck's queue overflows,
// relay-drops the packets the relay's own queues dropped (a client's
// outgoing queue full), retx% the datagrams the proxy sent beyond one per
// 1 160 bytes (SACKs included), kcp-retx% the KCP segments that KCP sent
// again over all segments KCP sent (the client's and the relay's, ACKs
// included), and relay-resent% the relay's data segments that went to
// carriers again over all it sent there, relay-held% the resends it held
// back over the same (relay.Stats).
func BenchmarkLossyDownload(b *testing.B) {
	for _, p := range lossyPaths {
		b.Run(p.name, func(b *testing.B) {
			size := int64(p.sizeMiB) << 20
			switch {
			case *lossySizeMiB > 0:
				size = int64(*lossySizeMiB) << 20
			case chaintest.Smoke():
				size = 256 << 10
			}
			r, udp, dialer := lossyChain(b, p.chainPath(uint64(b.N)), size, 9)
			// Rendezvous and WebRTC first, outside the measurement.
			first := dialer()
			first.Close()
			var elapsed time.Duration
			var downloads int
			before := udp.OutStats()
			kcpBefore := kcp.DefaultSnmp.Copy()
			relayBefore := r.Stats()
			for b.Loop() {
				start := time.Now()
				conn := dialer()
				download(b, conn, size, 9)
				elapsed += time.Since(start)
				downloads++
				conn.Close()
			}
			out := udp.OutStats()
			kcpAfter := kcp.DefaultSnmp.Copy()
			relayAfter := r.Stats()
			if segs := kcpAfter.OutSegs - kcpBefore.OutSegs; segs > 0 {
				b.ReportMetric(100*float64(kcpAfter.RetransSegs-kcpBefore.RetransSegs)/float64(segs), "kcp-retx%")
			}
			if sent := relayAfter.SegmentsSent - relayBefore.SegmentsSent; sent > 0 {
				b.ReportMetric(100*float64(relayAfter.ResendsSent-relayBefore.ResendsSent)/float64(sent), "relay-resent%")
				b.ReportMetric(100*float64(relayAfter.ResendsHeld-relayBefore.ResendsHeld)/float64(sent), "relay-held%")
			}
			mb := float64(size) * float64(downloads) / 1e6
			b.ReportMetric(mb/elapsed.Seconds(), "MB/s")
			b.ReportMetric(float64(out.Overflowed-before.Overflowed), "drops")
			b.ReportMetric(float64(relayAfter.QueueDrops-relayBefore.QueueDrops), "relay-drops")
			sent := float64(out.Sent - before.Sent)
			b.ReportMetric(100*(sent/(float64(size)*float64(downloads)/1160)-1), "retx%")
			if !chaintest.Quiet(b) {
				b.Logf("%s: %d × %d KiB, %s", p.name, downloads, size>>10, fmt.Sprint(out))
			}
		})
	}
}
