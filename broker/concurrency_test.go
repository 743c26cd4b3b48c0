package broker_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/messages"
)

// TestConcurrency runs 1000 proxy polls and 500 clients at once over
// loopback HTTP: every client is matched exactly once and receives the
// answer of the proxy that received its own offer. goleak (TestMain) checks
// that nothing is left behind. All come from one address: the rate limits
// are off.
func TestConcurrency(t *testing.T) {
	for _, mode := range serveModes {
		t.Run(mode.name, func(t *testing.T) {
			concurrency(t, mode.start(t, broker.Config{ProxyHold: longHold, ClientTimeout: time.Minute, DisableRateLimits: true}))
		})
	}
}

func concurrency(t *testing.T, tb *testBroker) {
	const proxies, clients = 1000, 500
	tb.client.Transport.(*http.Transport).MaxIdleConnsPerHost = proxies + clients

	var wg sync.WaitGroup
	var mu sync.Mutex
	offers := map[string]int{} // offer tag -> proxies that received it
	matched := 0
	for i := range proxies {
		wg.Go(func() {
			sid := fmt.Sprintf("proxy%04d", i)
			nat := []string{messages.NATUnrestricted, messages.NATRestricted, messages.NATUnknown}[i%3]
			got := tb.post(t, "/proxy", proxyPoll(t, sid, nat, (i%4)*8, ptr("")))
			r, err := messages.DecodeProxyPollResponse(got.body)
			if err != nil {
				t.Errorf("proxy %d: %d %q: %v", i, got.status, got.body, err)
				return
			}
			if r.Status == messages.StatusNoMatch {
				return
			}
			sdesc, err := messages.DecodeSessionDescription(r.Offer)
			if err != nil {
				t.Errorf("proxy %d: offer: %v", i, err)
				return
			}
			_, tag, _ := strings.Cut(sdesc.SDP, "a=tag:")
			tag, _, _ = strings.Cut(tag, "\r\n")
			mu.Lock()
			offers[tag]++
			matched++
			mu.Unlock()
			ans := tb.post(t, "/answer", proxyAnswer(t, sid, sd(t, "answer", "answer-to-"+tag)))
			if string(ans.body) != `{"Status":"success"}` {
				t.Errorf("proxy %d: answer response %q", i, ans.body)
			}
		})
	}
	tb.rec.waitStarted(t, proxies)

	var cwg sync.WaitGroup
	for i := range clients {
		cwg.Go(func() {
			tag := fmt.Sprintf("client%04d", i)
			got := tb.post(t, "/client", clientPoll(t, sd(t, "offer", tag), messages.NATUnrestricted, ""))
			r, err := messages.DecodeClientPollResponse(got.body)
			if err != nil || r.Error != "" {
				t.Errorf("client %d: %d %q (%v)", i, got.status, got.body, err)
				return
			}
			sdesc, err := messages.DecodeSessionDescription(r.Answer)
			if err != nil || !strings.Contains(sdesc.SDP, "a=tag:answer-to-"+tag+"\r\n") {
				t.Errorf("client %d got the wrong answer %q (%v)", i, r.Answer, err)
			}
		})
	}
	cwg.Wait()
	s := tb.Stats()
	if s.Matched != 0 || s.WaitingRestricted+s.WaitingUnrestricted != proxies-clients {
		t.Errorf("Stats after all clients = %+v, want %d waiting and none matched", s, proxies-clients)
	}
	tb.Close() // the unmatched half gets "no match" at once
	wg.Wait()
	if matched != clients || len(offers) != clients {
		t.Errorf("%d proxies matched with %d distinct offers, want %d", matched, len(offers), clients)
	}
	for tag, n := range offers {
		if n != 1 {
			t.Errorf("offer %s reached %d proxies", tag, n)
		}
	}
}
