package broker_test

import (
	"net/http"
	"testing"

	"github.com/flurrypt/flurry/broker"
)

// BenchmarkRendezvous is one whole match over loopback HTTP, as a proxy
// and a client see it: a proxy's poll, a client's offer, the proxy's
// answer, each on the keep-alive connections of one http.Client, through
// Broker.Listener with the production delay before parking. Time and
// allocations include the client side's, which runs in the same process;
// CPU per match beside Snowflake's broker is flurry-loadgen's
// (docs/performance.md, "Broker").
func BenchmarkRendezvous(b *testing.B) {
	tb := newGraceTestBroker(b, broker.Config{BridgeListPath: snowflakeBridges(b), ProxyHold: longHold, DisableRateLimits: true})
	poll := vector(b, "proxy-poll-request-1.3.json")
	offer := vector(b, "client-poll-request-1.0.txt")
	answer := vector(b, "proxy-answer-request.json")
	b.ReportAllocs()
	for b.Loop() {
		proxyRes := async(func() response { return tb.post(b, "/proxy", poll) })
		tb.rec.waitStarted(b, 1)
		clientRes := async(func() response { return tb.post(b, "/client", offer) })
		if r := <-proxyRes; r.status != http.StatusOK {
			b.Fatalf("proxy poll: %d %s", r.status, r.body)
		}
		if r := tb.post(b, "/answer", answer); r.status != http.StatusOK {
			b.Fatalf("answer: %d %s", r.status, r.body)
		}
		if r := <-clientRes; r.status != http.StatusOK {
			b.Fatalf("client: %d %s", r.status, r.body)
		}
	}
}
