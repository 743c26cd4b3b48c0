package matcher

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// TestStrikesOrder checks that a proxy with strikes is chosen only when no
// proxy with fewer strikes can serve the client.
func TestStrikesOrder(t *testing.T) {
	type px struct {
		nat     NAT
		strikes int
		clients int
		accepts uint64 // 0 means every bridge
	}
	tests := []struct {
		name    string
		proxies []px // enqueued in order, Sids p0, p1, ...
		client  NAT
		bridge  int
		want    string // Sid matched, "" for none
	}{
		{"clean beats struck that came first with fewer clients",
			[]px{{NATUnrestricted, 1, 0, 0}, {NATUnrestricted, 0, 8, 0}}, NATRestricted, 0, "p1"},
		{"fewer strikes first",
			[]px{{NATUnrestricted, 2, 0, 0}, {NATUnrestricted, 1, 16, 0}}, NATRestricted, 0, "p1"},
		{"strikes capped: 3 and 5 are equal, clients decide",
			[]px{{NATUnrestricted, 3, 8, 0}, {NATUnrestricted, 5, 0, 0}}, NATRestricted, 0, "p1"},
		{"strikes capped: 3 and 7 are equal, arrival decides",
			[]px{{NATUnrestricted, 7, 0, 0}, {NATUnrestricted, 3, 0, 0}}, NATRestricted, 0, "p0"},
		{"negative strikes count as none",
			[]px{{NATUnrestricted, -4, 8, 0}, {NATUnrestricted, 0, 0, 0}}, NATRestricted, 0, "p1"},
		{"equal strikes: fewer clients",
			[]px{{NATUnrestricted, 1, 8, 0}, {NATUnrestricted, 1, 0, 0}}, NATRestricted, 0, "p1"},
		{"struck is chosen when the clean one rejects the bridge",
			[]px{{NATUnrestricted, 0, 0, 1 << 1}, {NATUnrestricted, 2, 0, 1 << 0}}, NATRestricted, 0, "p1"},
		{"struck is chosen when the clean one has the wrong NAT",
			[]px{{NATRestricted, 0, 0, 0}, {NATUnrestricted, 1, 0, 0}}, NATRestricted, 0, "p1"},
		{"struck is chosen when alone",
			[]px{{NATUnrestricted, 3, 0, 0}}, NATUnknown, 0, "p0"},
		{"struck in another class loses to clean",
			[]px{{NATUnrestricted, 1, 0, 1 << 0}, {NATUnrestricted, 0, 24, 1<<0 | 1<<1}}, NATRestricted, 0, "p1"},
		// Unrestricted clients: the restricted pool first, unless its best
		// has more strikes than the unrestricted pool's.
		{"restricted pool first when clean",
			[]px{{NATUnrestricted, 0, 0, 0}, {NATRestricted, 0, 8, 0}}, NATUnrestricted, 0, "p1"},
		{"clean unrestricted beats struck restricted",
			[]px{{NATUnrestricted, 0, 8, 0}, {NATRestricted, 1, 0, 0}}, NATUnrestricted, 0, "p0"},
		{"equally struck: restricted pool first",
			[]px{{NATUnrestricted, 1, 0, 0}, {NATUnknown, 1, 8, 0}}, NATUnrestricted, 0, "p1"},
		{"less struck unrestricted beats more struck restricted",
			[]px{{NATUnrestricted, 1, 0, 0}, {NATRestricted, 2, 0, 0}}, NATUnrestricted, 0, "p0"},
		{"struck restricted when no unrestricted serves the bridge",
			[]px{{NATUnrestricted, 0, 0, 1 << 1}, {NATRestricted, 3, 0, 0}}, NATUnrestricted, 0, "p1"},
		{"clean restricted proxy in the pool wins over its struck peer",
			[]px{{NATRestricted, 1, 0, 0}, {NATUnrestricted, 0, 0, 0}, {NATRestricted, 0, 40, 0}}, NATUnrestricted, 0, "p2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New()
			for i, x := range tt.proxies {
				p := proxy(fmt.Sprintf("p%d", i), x.nat, x.clients)
				p.Strikes = x.strikes
				if x.accepts != 0 {
					p.Accepts = x.accepts
				}
				if err := m.Enqueue(p); err != nil {
					t.Fatal(err)
				}
			}
			p, _ := m.match(ClientOffer{NAT: tt.client, Bridge: tt.bridge}, &client{done: make(chan struct{})})
			got := ""
			if p != nil {
				got = p.Sid
			}
			if got != tt.want {
				t.Errorf("matched %q, want %q", got, tt.want)
			}
		})
	}
}

// TestStrikesDrainOrder drains one pool and checks the whole order.
func TestStrikesDrainOrder(t *testing.T) {
	m := New()
	proxies := []struct{ strikes, clients int }{
		{0, 16}, {1, 0}, {4, 0}, {0, 0}, {3, 8}, {2, 0}, {0, 16}, {1, 8}, {9, 0},
	}
	for i, x := range proxies {
		p := proxy(fmt.Sprintf("p%d", i), NATUnrestricted, x.clients)
		p.Strikes = x.strikes
		if err := m.Enqueue(p); err != nil {
			t.Fatal(err)
		}
	}
	// Strikes (3+ equal), then clients, then arrival.
	want := []string{"p3", "p0", "p6", "p1", "p7", "p5", "p2", "p8", "p4"}
	for _, w := range want {
		p, _ := m.match(ClientOffer{NAT: NATRestricted}, &client{done: make(chan struct{})})
		if p == nil || p.Sid != w {
			t.Fatalf("matched %v, want %s", p, w)
		}
	}
}

// TestTimeoutReportsProxy checks what Rendezvous reports about the proxy:
// its Key with an answer, its Key and Type with ErrTimedOut when it held
// the offer without answering, nothing when it left before the offer
// reached it or when there was no proxy.
func TestTimeoutReportsProxy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		type result struct {
			a   Answer
			err error
		}
		rendezvous := func(ctx context.Context) <-chan result {
			ch := make(chan result, 1)
			go func() {
				a, err := m.Rendezvous(ctx, ClientOffer{SDP: "o", NAT: NATUnrestricted})
				ch <- result{a, err}
			}()
			return ch
		}
		enqueue := func(sid string, key uint64) *Proxy {
			p := proxy(sid, NATUnrestricted, 0)
			p.Key = key
			p.Type = "webext"
			if err := m.Enqueue(p); err != nil {
				t.Fatal(err)
			}
			return p
		}

		// Answered: the answer carries the Key.
		enqueue("answered", 41)
		res := rendezvous(t.Context())
		synctest.Wait()
		if !answered(m.Answer("answered", "sdp")) {
			t.Fatal("Answer failed")
		}
		if r := <-res; r.err != nil || r.a != (Answer{SDP: "sdp", ProxyType: "webext", ProxyKey: 41}) {
			t.Errorf("answered: %+v, %v", r.a, r.err)
		}

		// Never answered: ErrTimedOut with the proxy's Type and Key.
		enqueue("silent", 42)
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		if r := <-rendezvous(ctx); !errors.Is(r.err, ErrTimedOut) || r.a != (Answer{ProxyType: "webext", ProxyKey: 42}) {
			t.Errorf("silent proxy: %+v, %v; want its Type and Key with ErrTimedOut", r.a, r.err)
		}

		// Gone before the offer reached it, as time ran out: not to blame.
		// (The context reports its end before its Done channel closes, so
		// that the client sees the departure with its time already up.)
		p := enqueue("gone", 43)
		ectx := &endedContext{Context: t.Context()}
		res = rendezvous(ectx)
		synctest.Wait() // matched, waiting for the answer
		ectx.ended.Store(true)
		_ = m.abandon(p, context.Canceled)
		if r := <-res; !errors.Is(r.err, ErrTimedOut) || r.a != (Answer{}) {
			t.Errorf("gone proxy: %+v, %v; want ErrTimedOut with a zero Answer", r.a, r.err)
		}

		// No proxy: nothing to report.
		if r := <-rendezvous(t.Context()); !errors.Is(r.err, ErrNoProxies) || r.a != (Answer{}) {
			t.Errorf("no proxy: %+v, %v", r.a, r.err)
		}
	})
}

// endedContext is a context whose Err can be set before its Done channel
// (never closed here) would fire.
type endedContext struct {
	context.Context
	ended atomic.Bool
}

func (c *endedContext) Err() error {
	if c.ended.Load() {
		return context.DeadlineExceeded
	}
	return c.Context.Err()
}
