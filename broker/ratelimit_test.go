package broker_test

import (
	"net/http"
	"net/netip"
	"testing"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/messages"
)

// ratePath is one rate-limited rendezvous path: how to send it a request
// through c, and the Config fields that limit it.
type ratePath struct {
	name    string
	send    func(t testing.TB, tb *testBroker, c *http.Client) response
	perAddr func(cfg *broker.Config, burst int)
	global  func(cfg *broker.Config, rate float64)
}

// ratePaths are the rendezvous paths reached over HTTP. Every request
// returns at once: polls and offers find nobody to wait for.
func ratePaths() []ratePath {
	const tiny = 0.001 // requests per second: nothing refills during a test
	return []ratePath{
		{"proxy",
			func(t testing.TB, tb *testBroker, c *http.Client) response {
				return tb.postWith(t, c, "/proxy", nil) // 400, not held
			},
			func(cfg *broker.Config, burst int) { cfg.ProxyRate, cfg.ProxyBurst = tiny, burst },
			func(cfg *broker.Config, r float64) { cfg.ProxyGlobalRate = r }},
		{"client",
			func(t testing.TB, tb *testBroker, c *http.Client) response {
				return tb.postWith(t, c, "/client", clientPoll(t, sd(t, "offer", "rl"), messages.NATUnknown, ""))
			},
			func(cfg *broker.Config, burst int) { cfg.ClientRate, cfg.ClientBurst = tiny, burst },
			func(cfg *broker.Config, r float64) { cfg.ClientGlobalRate = r }},
		{"answer",
			func(t testing.TB, tb *testBroker, c *http.Client) response {
				return tb.postWith(t, c, "/answer", proxyAnswer(t, "nobody", sd(t, "answer", "rl")))
			},
			func(cfg *broker.Config, burst int) { cfg.AnswerRate, cfg.AnswerBurst = tiny, burst },
			func(cfg *broker.Config, r float64) { cfg.AnswerGlobalRate = r }},
		{"amp",
			func(t testing.TB, tb *testBroker, c *http.Client) response {
				path := broker.AMPPathPrefix + amp.EncodePath(clientPoll(t, sd(t, "offer", "rl"), messages.NATUnknown, ""))
				return tb.doWith(t, c, http.MethodGet, path, nil, nil)
			},
			func(cfg *broker.Config, burst int) { cfg.AMPRate, cfg.AMPBurst = tiny, burst },
			func(cfg *broker.Config, r float64) { cfg.AMPGlobalRate = r }},
	}
}

// limitedBroker starts a test broker with cfg whose rate limiters' clock
// stands still.
func limitedBroker(t testing.TB, cfg broker.Config) *testBroker {
	t.Helper()
	return startTestBroker(t, cfg, parkingListener, nil, func(b *broker.Broker) {
		b.SetParkAfter(0)
		b.StopRateLimitClock()
	})
}

// expectLimited checks that got is the 429 of a rate limit.
func expectLimited(t testing.TB, what string, got response) {
	t.Helper()
	expect(t, what, got, http.StatusTooManyRequests, []byte("rate limit exceeded\n"))
	if got.header.Get("Retry-After") != "1" || got.header.Get("Access-Control-Allow-Origin") != "*" {
		t.Errorf("%s: 429 headers = %v", what, got.header)
	}
}

// TestRateLimitPerAddress checks every HTTP rendezvous path's per-address
// limit: loopback is limited like any address (no exemption), another
// address has its own bucket, OPTIONS is never limited, and
// RateLimitExempt exempts only what it lists.
func TestRateLimitPerAddress(t *testing.T) {
	for _, p := range ratePaths() {
		t.Run(p.name, func(t *testing.T) {
			cfg := broker.Config{}
			p.perAddr(&cfg, 2)
			tb := limitedBroker(t, cfg)
			a, b := sourceClient(t, "127.0.0.1"), sourceClient(t, "127.0.0.2")
			for i := range 2 {
				if got := p.send(t, tb, a); got.status == http.StatusTooManyRequests {
					t.Fatalf("request %d of the burst refused", i)
				}
			}
			expectLimited(t, "127.0.0.1 over its burst", p.send(t, tb, a))
			if got := p.send(t, tb, b); got.status == http.StatusTooManyRequests {
				t.Error("127.0.0.2 was limited with 127.0.0.1")
			}
			path := "/" + p.name
			if p.name == "amp" {
				path = broker.AMPPathPrefix + "x"
			}
			if got := tb.doWith(t, a, http.MethodOptions, path, nil, nil); got.status != http.StatusOK {
				t.Errorf("OPTIONS over the limit = %d, want 200", got.status)
			}
			tb.rec.mu.Lock()
			limited := 0
			for _, r := range tb.rec.requests {
				if r == event.ReasonRateLimited {
					limited++
				}
			}
			tb.rec.mu.Unlock()
			if limited != 1 {
				t.Errorf("%d rate-limited events, want 1", limited)
			}

			cfg.RateLimitExempt = []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}
			tb = limitedBroker(t, cfg)
			for range 4 {
				if got := p.send(t, tb, b); got.status == http.StatusTooManyRequests {
					t.Fatal("exempt address limited")
				}
			}
			p.send(t, tb, a)
			p.send(t, tb, a)
			expectLimited(t, "127.0.0.1 beside an exemption", p.send(t, tb, a))
		})
	}
}

// TestRateLimitGlobal checks every HTTP rendezvous path's endpoint-wide
// limit, and that a request refused per address takes nothing from it.
func TestRateLimitGlobal(t *testing.T) {
	for _, p := range ratePaths() {
		t.Run(p.name, func(t *testing.T) {
			cfg := broker.Config{}
			p.perAddr(&cfg, 1)
			p.global(&cfg, 1) // bursts of 2, and the clock stands still
			tb := limitedBroker(t, cfg)
			a, b, c := sourceClient(t, "127.0.0.2"), sourceClient(t, "127.0.0.3"), sourceClient(t, "127.0.0.4")
			if got := p.send(t, tb, a); got.status == http.StatusTooManyRequests {
				t.Fatal("first request refused")
			}
			expectLimited(t, "127.0.0.2 over its own limit", p.send(t, tb, a))
			if got := p.send(t, tb, b); got.status == http.StatusTooManyRequests {
				t.Fatal("the refused request took a token from the endpoint's limit")
			}
			expectLimited(t, "127.0.0.4 over the endpoint's limit", p.send(t, tb, c))
		})
	}
}

// TestDisableRateLimits checks that DisableRateLimits lifts every limit.
func TestDisableRateLimits(t *testing.T) {
	for _, p := range ratePaths() {
		t.Run(p.name, func(t *testing.T) {
			cfg := broker.Config{DisableRateLimits: true}
			p.perAddr(&cfg, 1)
			p.global(&cfg, 0.001)
			tb := limitedBroker(t, cfg)
			for range 5 {
				if got := p.send(t, tb, tb.client); got.status == http.StatusTooManyRequests {
					t.Fatal("limited despite DisableRateLimits")
				}
			}
		})
	}
}

// TestRateLimitSQS checks the SQS path's limit: messages beyond it are
// deleted unanswered (no client queue is created for them) and counted.
func TestRateLimitSQS(t *testing.T) {
	env := newSQSEnv(t, broker.Config{SQSGlobalRate: 1}) // bursts of 2
	env.StopRateLimitClock()
	env.runSQS(t, env.sqsConfig())
	ids := []string{"0a", "0b", "0c"}
	for _, id := range ids {
		env.sendClientPoll(t, clientPoll(t, sd(t, "offer", id), messages.NATUnknown, ""), stringAttr(id))
		env.waitHandled(t)
	}
	answered := 0
	for _, id := range ids {
		if _, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + id); ok {
			answered++
		}
	}
	if answered != 2 {
		t.Errorf("%d client queues created, want 2 (the third message over the limit)", answered)
	}
	env.rec.mu.Lock()
	defer env.rec.mu.Unlock()
	if n := len(env.rec.requests); n != 1 || env.rec.requests[0] != event.ReasonRateLimited {
		t.Errorf("rejected requests = %v, want one rate-limited", env.rec.requests)
	}
}
