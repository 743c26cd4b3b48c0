package matcher

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fillPool enqueues n waiting proxies and returns them.
func fillPool(b *testing.B, m *Matcher, n int) []*Proxy {
	b.Helper()
	ps := make([]*Proxy, n)
	for i := range ps {
		ps[i] = &Proxy{Sid: "bg" + strconv.Itoa(i), NAT: NAT(i % 3), Clients: (i % 4) * 8, Accepts: allMask}
		if err := m.Enqueue(ps[i]); err != nil {
			b.Fatal(err)
		}
	}
	return ps
}

// BenchmarkProxyEnqueue measures a proxy entering and leaving a pool of 500
// waiting proxies (the matcher's share of an unmatched poll).
func BenchmarkProxyEnqueue(b *testing.B) {
	m := New()
	fillPool(b, m, 500)
	sids := make([]string, 1024)
	for i := range sids {
		sids[i] = "sid" + strconv.Itoa(i)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		p := &Proxy{Sid: sids[i%len(sids)], NAT: NATUnrestricted, Clients: 8, Accepts: allMask}
		if err := m.Enqueue(p); err != nil {
			b.Fatal(err)
		}
		if _, err := m.withdraw(p); !errors.Is(err, ErrNoMatch) {
			b.Fatal(err)
		}
	}
}

// BenchmarkClientMatch measures one complete match without goroutine
// hand-over, in a pool kept at 500 waiting proxies: a client takes the best
// proxy, the answer is delivered, and a proxy with the freed Sid enqueues.
func BenchmarkClientMatch(b *testing.B) {
	m := New()
	fillPool(b, m, 500)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		cw := &client{done: make(chan struct{})}
		got, _ := m.match(ClientOffer{SDP: "offer", NAT: NATUnrestricted}, cw)
		if got == nil {
			b.Fatal("no match")
		}
		if !answered(m.Answer(got.Sid, "answer")) {
			b.Fatal("answer not delivered")
		}
		<-cw.done
		p := &Proxy{Sid: got.Sid, NAT: NAT(i % 3), Clients: (i % 4) * 8, Accepts: allMask}
		if err := m.Enqueue(p); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRendezvous measures matches through the blocking API: 500 proxy
// goroutines poll in a loop and answer at once, clients run in parallel.
func BenchmarkRendezvous(b *testing.B) {
	m := New()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var next atomic.Int64
	for range 500 {
		wg.Go(func() {
			for ctx.Err() == nil {
				p := &Proxy{Sid: strconv.FormatInt(next.Add(1), 36), NAT: NATUnrestricted, Accepts: allMask}
				if _, err := m.Poll(ctx, p, time.Minute); err == nil {
					answered(m.Answer(p.Sid, "answer"))
				}
			}
		})
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			for {
				_, err := m.Rendezvous(ctx, ClientOffer{SDP: "offer", NAT: NATUnrestricted})
				if err == nil {
					break
				}
				if !errors.Is(err, ErrNoProxies) {
					b.Error(err)
					return
				}
			}
		}
	})
	b.StopTimer()
	cancel()
	m.Close()
	wg.Wait()
}
