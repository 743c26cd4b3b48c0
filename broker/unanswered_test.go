package broker_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

// sourceClient returns an HTTP client whose connections come from the
// loopback address ip (Linux routes all of 127.0.0.0/8 to lo), so that the
// broker sees a proxy at that address.
func sourceClient(t testing.TB, ip string) *http.Client {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr := &http.Transport{DialContext: d.DialContext}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// postWith is post through the HTTP client c.
func (tb *testBroker) postWith(t testing.TB, c *http.Client, path string, body []byte) response {
	t.Helper()
	return tb.doWith(t, c, http.MethodPost, path, body, nil)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// unansweredBroker is a test broker with proxies at two addresses.
type unansweredBroker struct {
	*testBroker
	bad, good *http.Client // proxies at 127.0.0.2 and 127.0.0.3
}

// poll starts an unrestricted proxy's poll through c and waits until it is
// in its pool.
func (ub *unansweredBroker) poll(t testing.TB, c *http.Client, sid string, clients int) <-chan response {
	t.Helper()
	res := async(func() response {
		return ub.postWith(t, c, "/proxy", proxyPoll(t, sid, messages.NATUnrestricted, clients, ptr("")))
	})
	ub.rec.waitStarted(t, 1)
	return res
}

// client starts a restricted client's request with an offer tagged tag.
func (ub *unansweredBroker) client(t testing.TB, tag string) <-chan response {
	t.Helper()
	body := clientPoll(t, sd(t, "offer", tag), messages.NATRestricted, "")
	return async(func() response { return ub.post(t, "/client", body) })
}

// first waits for the poll that gets the next client: want, or other
// (fails at once).
func first(t testing.TB, want, other <-chan response, otherName string) response {
	t.Helper()
	select {
	case got := <-want:
		return got
	case got := <-other:
		t.Fatalf("the %s proxy was matched first: %q", otherName, got.body)
		return got
	}
}

// matched checks that a proxy's poll got the client offer tagged tag.
func matched(t testing.TB, who string, got response, tag string) {
	t.Helper()
	r, err := messages.DecodeProxyPollResponse(got.body)
	if err != nil || r.Status != messages.StatusClientMatch || r.Offer != sd(t, "offer", tag) {
		t.Fatalf("%s proxy got %d %q (%v), want the offer of client %s", who, got.status, got.body, err, tag)
	}
}

// answer has the proxy of sid answer through c, and checks that the
// client's request res then gets that answer.
func (ub *unansweredBroker) answer(t testing.TB, c *http.Client, sid string, res <-chan response) {
	t.Helper()
	ans := sd(t, "answer", sid)
	expect(t, "answer of "+sid, ub.postWith(t, c, "/answer", proxyAnswer(t, sid, ans)), http.StatusOK, vector(t, "proxy-answer-response-success.json"))
	got := <-res
	if r, err := messages.DecodeClientPollResponse(got.body); err != nil || r.Answer != ans {
		t.Fatalf("client got %d %q (%v), want the answer of %s", got.status, got.body, err, sid)
	}
}

// TestUnansweredProxyMatchedLast runs proxies at two loopback addresses;
// the one at 127.0.0.2 takes a client's offer and never answers. Afterwards
// it is matched only when the other cannot be, although it arrives first
// and reports fewer clients, unless the penalty is off or the client left
// before its time was up.
func TestUnansweredProxyMatchedLast(t *testing.T) {
	const clientTimeout = time.Second // what the unanswered client waits
	tests := []struct {
		name         string
		penalty      time.Duration
		clientLeaves bool // the first client gives up before its time is up
		struck       bool // the bad proxy is matched after the good one
		counted      bool // the unanswered match is in the statistics
	}{
		{"penalty", 0, false, true, true},
		{"penalty off", -1, false, false, true},
		{"client left early", 0, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			tb := newTestBroker(t, broker.Config{ProxyHold: longHold, ClientTimeout: clientTimeout, UnansweredPenalty: tt.penalty, Logger: newTextLogger(logs)})
			ub := &unansweredBroker{testBroker: tb, bad: sourceClient(t, "127.0.0.2"), good: sourceClient(t, "127.0.0.3")}

			// The bad proxy, alone, takes the first client's offer and
			// never answers.
			bad1 := ub.poll(t, ub.bad, "bad1", 0)
			if tt.clientLeaves {
				ctx, cancel := context.WithCancel(t.Context())
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, tb.srv.URL+"/client",
					bytes.NewReader(clientPoll(t, sd(t, "offer", "c1"), messages.NATRestricted, "")))
				if err != nil {
					t.Fatal(err)
				}
				done := make(chan error, 1)
				go func() {
					resp, err := tb.client.Do(req)
					if err == nil {
						resp.Body.Close()
					}
					done <- err
				}()
				matched(t, "bad", <-bad1, "c1")
				cancel()
				if err := <-done; !errors.Is(err, context.Canceled) {
					t.Fatalf("client request error = %v", err)
				}
				if o := <-tb.rec.clientEnded; o != event.ClientTimeout {
					t.Fatalf("client outcome = %v, want timeout", o)
				}
			} else {
				c1 := ub.client(t, "c1")
				matched(t, "bad", <-bad1, "c1")
				expect(t, "unanswered client", <-c1, http.StatusOK, vector(t, "client-poll-response-timeout.json"))
			}

			// Both poll again, the bad one first and with fewer clients.
			bad2 := ub.poll(t, ub.bad, "bad2", 0)
			good1 := ub.poll(t, ub.good, "good1", 8)
			c2 := ub.client(t, "c2")
			if tt.struck {
				matched(t, "good", first(t, good1, bad2, "bad"), "c2")
				ub.answer(t, ub.good, "good1", c2)
				// Again, while the bad one still waits.
				good2 := ub.poll(t, ub.good, "good2", 8)
				c3 := ub.client(t, "c3")
				matched(t, "good", first(t, good2, bad2, "bad"), "c3")
				ub.answer(t, ub.good, "good2", c3)
				// Alone, the struck proxy is still matched (and answers
				// this time).
				c4 := ub.client(t, "c4")
				matched(t, "bad", <-bad2, "c4")
				ub.answer(t, ub.bad, "bad2", c4)
			} else {
				matched(t, "bad", first(t, bad2, good1, "good"), "c2")
				ub.answer(t, ub.bad, "bad2", c2)
				c3 := ub.client(t, "c3")
				matched(t, "good", <-good1, "c3")
				ub.answer(t, ub.good, "good1", c3)
			}

			tb.rec.mu.Lock()
			unanswered := slices.Clone(tb.rec.unanswered)
			tb.rec.mu.Unlock()
			var want []string
			if tt.counted {
				want = []string{messages.ProxyTypeStandalone}
			}
			if !slices.Equal(unanswered, want) {
				t.Errorf("ProxyUnanswered events = %q, want %q", unanswered, want)
			}
			// The strike is logged (with the penalty on), without the
			// proxy's address.
			if s := logs.String(); strings.Contains(s, "strike recorded") != (tt.counted && tt.struck) || strings.Contains(s, "127.0.0.2") {
				t.Errorf("logs:\n%s", s)
			}
			m, _ := tb.scrape(t)
			v, ok := m[series("flurry_broker_proxy_unanswered_total", "type", "standalone")]
			if ok != tt.counted || (ok && v != 8) {
				t.Errorf("flurry_broker_proxy_unanswered_total = %v (present %v), want 8 present %v", v, ok, tt.counted)
			}
		})
	}
}
