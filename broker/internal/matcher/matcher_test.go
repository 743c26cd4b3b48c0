package matcher

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

const (
	hold    = 10 * time.Second
	allMask = ^uint64(0)
)

// pollResult is what a background Poll returned.
type pollResult struct {
	offer Offer
	err   error
}

// startPoll runs Poll for p in a goroutine and returns its result channel.
func startPoll(ctx context.Context, m *Matcher, p *Proxy) <-chan pollResult {
	ch := make(chan pollResult, 1)
	go func() {
		o, err := m.Poll(ctx, p, hold)
		ch <- pollResult{o, err}
	}()
	return ch
}

func proxy(sid string, nat NAT, clients int) *Proxy {
	return &Proxy{Sid: sid, NAT: nat, Clients: clients, Accepts: allMask, Type: "standalone"}
}

func TestPollTimesOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		start := time.Now()
		_, err := m.Poll(t.Context(), proxy("a", NATUnrestricted, 0), hold)
		if !errors.Is(err, ErrNoMatch) {
			t.Fatalf("Poll = %v, want ErrNoMatch", err)
		}
		if got := time.Since(start); got != hold {
			t.Errorf("Poll returned after %v, want %v", got, hold)
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Errorf("Stats after timeout = %+v, want empty", s)
		}
	})
}

func TestMatchAndAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		res := startPoll(t.Context(), m, proxy("sid1", NATUnrestricted, 0))
		synctest.Wait()
		if s := m.Stats(); s.WaitingUnrestricted != 1 {
			t.Fatalf("Stats = %+v, want one unrestricted proxy waiting", s)
		}

		ansCh := make(chan Answer, 1)
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{SDP: "offer", NAT: NATRestricted, Bridge: 3})
			if err != nil {
				t.Errorf("Rendezvous: %v", err)
			}
			ansCh <- a
		}()
		r := <-res
		if r.err != nil {
			t.Fatalf("Poll: %v", r.err)
		}
		if want := (Offer{SDP: "offer", NAT: NATRestricted, Bridge: 3}); r.offer != want {
			t.Fatalf("offer = %+v, want %+v", r.offer, want)
		}
		if answered(m.Answer("other", "x")) {
			t.Error("Answer for an unknown Sid succeeded")
		}
		if !answered(m.Answer("sid1", "answer")) {
			t.Fatal("Answer failed")
		}
		if answered(m.Answer("sid1", "again")) {
			t.Error("second Answer for the same Sid succeeded")
		}
		if a := <-ansCh; a != (Answer{SDP: "answer", ProxyType: "standalone"}) {
			t.Errorf("answer = %+v", a)
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Errorf("Stats after answer = %+v, want empty", s)
		}
	})
}

// sessions returns the counts SessionCounts reports by "type/nat", and
// fails t if they differ from a walk over every session.
func sessions(t *testing.T, m *Matcher) map[string]int {
	t.Helper()
	out := map[string]int{}
	m.SessionCounts(func(proxyType string, nat NAT, n int) { out[fmt.Sprintf("%s/%d", proxyType, nat)] += n })
	walk := map[string]int{}
	m.mu.Lock()
	for _, p := range m.sessions {
		walk[fmt.Sprintf("%s/%d", p.Type, p.NAT)]++
	}
	m.mu.Unlock()
	if fmt.Sprint(out) != fmt.Sprint(walk) {
		t.Errorf("SessionCounts = %v, but the sessions are %v", out, walk)
	}
	return out
}

// TestSessionCounts checks that SessionCounts reports waiting proxies and
// matched proxies whose answer is outstanding, as Snowflake's /debug counts
// them, and forgets a session once it is answered, abandoned or given up.
func TestSessionCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		pu := proxy("u", NATUnrestricted, 0)
		pr := proxy("r", NATRestricted, 0)
		pr.Type = "webext"
		resU := startPoll(t.Context(), m, pu)
		resR := startPoll(t.Context(), m, pr)
		synctest.Wait()
		want := map[string]int{fmt.Sprintf("standalone/%d", NATUnrestricted): 1, fmt.Sprintf("webext/%d", NATRestricted): 1}
		if got := sessions(t, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("waiting: SessionCounts = %v, want %v", got, want)
		}
		// A restricted client takes the unrestricted proxy, which stays a
		// session until it answers.
		ansCh := make(chan error, 1)
		go func() {
			_, err := m.Rendezvous(t.Context(), ClientOffer{SDP: "offer", NAT: NATRestricted})
			ansCh <- err
		}()
		if r := <-resU; r.err != nil {
			t.Fatalf("Poll: %v", r.err)
		}
		if s := m.Stats(); s.Matched != 1 || s.WaitingRestricted != 1 {
			t.Fatalf("Stats = %+v, want one matched and one waiting", s)
		}
		if got := sessions(t, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("matched: SessionCounts = %v, want %v", got, want)
		}
		if !answered(m.Answer("u", "answer")) {
			t.Fatal("Answer failed")
		}
		if err := <-ansCh; err != nil {
			t.Fatalf("Rendezvous: %v", err)
		}
		want = map[string]int{fmt.Sprintf("webext/%d", NATRestricted): 1}
		if got := sessions(t, m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("answered: SessionCounts = %v, want %v", got, want)
		}
		m.Close()
		if r := <-resR; !errors.Is(r.err, ErrNoMatch) {
			t.Fatalf("Poll after Close = %v, want ErrNoMatch", r.err)
		}
		if got := sessions(t, m); len(got) != 0 {
			t.Fatalf("after Close: SessionCounts = %v, want none", got)
		}
	})
}

// TestSessionCountsAbandoned checks the counts after a matched proxy whose
// offer was not delivered is abandoned, and after a client gives up.
func TestSessionCountsAbandoned(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		gone, silent := proxy("gone", NATUnrestricted, 0), proxy("silent", NATUnrestricted, 0)
		for _, p := range []*Proxy{gone, silent} {
			if err := m.Enqueue(p); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		errCh := make(chan error, 1)
		go func() {
			_, err := m.Rendezvous(ctx, ClientOffer{SDP: "offer", NAT: NATRestricted})
			errCh <- err
		}()
		if _, err := m.Await(t.Context(), gone, time.Hour); err != nil {
			t.Fatalf("Await: %v", err)
		}
		_ = m.Abandon(gone, errors.New("write failed")) // the client moves on to silent
		if _, err := m.Await(t.Context(), silent, time.Hour); err != nil {
			t.Fatalf("Await: %v", err)
		}
		if got := sessions(t, m); got[fmt.Sprintf("standalone/%d", NATUnrestricted)] != 1 {
			t.Fatalf("SessionCounts = %v, want the silent proxy only", got)
		}
		if err := <-errCh; !errors.Is(err, ErrTimedOut) {
			t.Fatalf("Rendezvous = %v, want ErrTimedOut", err)
		}
		if got := sessions(t, m); len(got) != 0 {
			t.Fatalf("after the client gave up: SessionCounts = %v, want none", got)
		}
	})
}

func TestNATPolicy(t *testing.T) {
	tests := []struct {
		proxies []NAT // waiting proxies, Sids p0, p1, ...
		client  NAT
		want    string // Sid matched, "" for ErrNoProxies
	}{
		{[]NAT{NATUnrestricted}, NATUnrestricted, "p0"},
		{[]NAT{NATUnrestricted}, NATRestricted, "p0"},
		{[]NAT{NATUnrestricted}, NATUnknown, "p0"},
		{[]NAT{NATRestricted}, NATUnrestricted, "p0"},
		{[]NAT{NATUnknown}, NATUnrestricted, "p0"},
		{[]NAT{NATRestricted}, NATRestricted, ""},
		{[]NAT{NATRestricted}, NATUnknown, ""},
		{[]NAT{NATUnknown}, NATRestricted, ""},
		{[]NAT{NATUnknown}, NATUnknown, ""},
		// An unrestricted client spends a restricted proxy first.
		{[]NAT{NATUnrestricted, NATRestricted}, NATUnrestricted, "p1"},
		{[]NAT{NATUnrestricted, NATUnknown}, NATUnrestricted, "p1"},
		// A restricted client never takes one.
		{[]NAT{NATRestricted, NATUnrestricted}, NATRestricted, "p1"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.proxies, tt.client), func(t *testing.T) {
			m := New()
			for i, nat := range tt.proxies {
				if err := m.Enqueue(proxy(fmt.Sprintf("p%d", i), nat, 0)); err != nil {
					t.Fatal(err)
				}
			}
			p, _ := m.match(ClientOffer{NAT: tt.client}, &client{done: make(chan struct{})})
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

func TestLeastLoadedFirst(t *testing.T) {
	m := New()
	clients := []int{16, 8, 0, 24, 8, 0, 40}
	for i, c := range clients {
		if err := m.Enqueue(proxy(fmt.Sprintf("p%d", i), NATUnrestricted, c)); err != nil {
			t.Fatal(err)
		}
	}
	// Fewest clients first; equal counts in arrival order.
	want := []string{"p2", "p5", "p1", "p4", "p0", "p3", "p6"}
	for _, w := range want {
		p, _ := m.match(ClientOffer{NAT: NATUnrestricted}, &client{done: make(chan struct{})})
		if p == nil || p.Sid != w {
			t.Fatalf("matched %v, want %s", p, w)
		}
	}
	if p, _ := m.match(ClientOffer{NAT: NATUnrestricted}, &client{done: make(chan struct{})}); p != nil {
		t.Fatalf("matched %s from an empty pool", p.Sid)
	}
}

func TestHeapOrderRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	m := New()
	ps := make([]*Proxy, 500)
	for i := range ps {
		ps[i] = &Proxy{Sid: fmt.Sprint(i), NAT: NATRestricted, Strikes: r.IntN(5), Clients: r.IntN(10) * 8, Accepts: uint64(1 + r.IntN(3))}
		if err := m.Enqueue(ps[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Withdraw a random third so that removals from the middle are covered.
	for _, i := range r.Perm(len(ps))[:len(ps)/3] {
		if _, err := m.withdraw(ps[i]); !errors.Is(err, ErrNoMatch) {
			t.Fatal(err)
		}
	}
	last := map[int]*Proxy{} // last pop per bridge bit index
	for {
		bridge := r.IntN(2)
		p, _ := m.match(ClientOffer{NAT: NATUnrestricted, Bridge: bridge}, &client{done: make(chan struct{})})
		if p == nil {
			if p, _ = m.match(ClientOffer{NAT: NATUnrestricted, Bridge: 1 - bridge}, &client{done: make(chan struct{})}); p == nil {
				break
			}
			bridge = 1 - bridge
		}
		if p.Accepts&(1<<bridge) == 0 {
			t.Fatalf("proxy %s with mask %b matched bridge %d", p.Sid, p.Accepts, bridge)
		}
		if prev := last[bridge]; prev != nil && prev.Accepts == p.Accepts && before(p, prev) {
			t.Fatalf("proxy %s popped after %s but orders before it", p.Sid, prev.Sid)
		}
		last[bridge] = p
	}
	if s := m.Stats(); s.WaitingRestricted != 0 || s.WaitingUnrestricted != 0 {
		t.Fatalf("Stats = %+v after draining", s)
	}
}

func TestBridgeAcceptance(t *testing.T) {
	m := New()
	// p0 is the least loaded but only accepts bridge 1.
	p0 := &Proxy{Sid: "p0", NAT: NATUnrestricted, Clients: 0, Accepts: 1 << 1}
	p1 := &Proxy{Sid: "p1", NAT: NATUnrestricted, Clients: 8, Accepts: 1<<0 | 1<<1}
	for _, p := range []*Proxy{p0, p1} {
		if err := m.Enqueue(p); err != nil {
			t.Fatal(err)
		}
	}
	if p, _ := m.match(ClientOffer{NAT: NATUnrestricted, Bridge: 0}, &client{done: make(chan struct{})}); p != p1 {
		t.Fatalf("bridge 0 matched %v, want p1", p)
	}
	if p, _ := m.match(ClientOffer{NAT: NATUnrestricted, Bridge: 0}, &client{done: make(chan struct{})}); p != nil {
		t.Fatalf("bridge 0 matched %s, which does not accept it", p.Sid)
	}
	if p, _ := m.match(ClientOffer{NAT: NATUnrestricted, Bridge: 1}, &client{done: make(chan struct{})}); p != p0 {
		t.Fatalf("bridge 1 matched %v, want p0", p)
	}
	if _, err := m.Rendezvous(context.Background(), ClientOffer{Bridge: MaxBridges}); !errors.Is(err, ErrBadBridge) {
		t.Errorf("Rendezvous with bridge %d = %v, want ErrBadBridge", MaxBridges, err)
	}
}

func TestDuplicateSid(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		first := startPoll(t.Context(), m, proxy("dup", NATUnrestricted, 0))
		synctest.Wait()
		if _, err := m.Poll(t.Context(), proxy("dup", NATUnrestricted, 0), hold); !errors.Is(err, ErrDuplicateSid) {
			t.Fatalf("second Poll while waiting = %v, want ErrDuplicateSid", err)
		}
		// Match the first; the Sid stays taken until the answer.
		clientDone := make(chan error, 1)
		go func() {
			_, err := m.Rendezvous(t.Context(), ClientOffer{NAT: NATUnrestricted})
			clientDone <- err
		}()
		if r := <-first; r.err != nil {
			t.Fatal(r.err)
		}
		if _, err := m.Poll(t.Context(), proxy("dup", NATUnrestricted, 0), hold); !errors.Is(err, ErrDuplicateSid) {
			t.Fatalf("second Poll while matched = %v, want ErrDuplicateSid", err)
		}
		if !answered(m.Answer("dup", "a")) {
			t.Fatal("Answer failed")
		}
		if err := <-clientDone; err != nil {
			t.Fatal(err)
		}
		// Done: the Sid is free again.
		if _, err := m.Poll(t.Context(), proxy("dup", NATUnrestricted, 0), hold); !errors.Is(err, ErrNoMatch) {
			t.Fatalf("Poll after the session ended = %v, want ErrNoMatch", err)
		}
		// The same *Proxy cannot be enqueued twice.
		p := proxy("once", NATUnrestricted, 0)
		p.state = stateDone
		if err := m.Enqueue(p); !errors.Is(err, ErrDuplicateSid) {
			t.Fatalf("re-enqueue of a used Proxy = %v", err)
		}
	})
}

func TestClientTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		res := startPoll(t.Context(), m, proxy("slow", NATUnrestricted, 0))
		synctest.Wait()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		_, err := m.Rendezvous(ctx, ClientOffer{NAT: NATUnrestricted})
		if !errors.Is(err, ErrTimedOut) {
			t.Fatalf("Rendezvous = %v, want ErrTimedOut", err)
		}
		if got := time.Since(start); got != 5*time.Second {
			t.Errorf("timed out after %v", got)
		}
		if r := <-res; r.err != nil {
			t.Fatalf("proxy poll: %v", r.err)
		}
		// The late answer finds nobody (Snowflake's answer race, item 11).
		if answered(m.Answer("slow", "late")) {
			t.Error("late Answer succeeded")
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Errorf("Stats = %+v", s)
		}
	})
}

func TestProxyGoneClientRetries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		// The gone proxy is preferred (fewer clients) but leaves before
		// its goroutine sees the match.
		gone := proxy("gone", NATUnrestricted, 0)
		if err := m.Enqueue(gone); err != nil {
			t.Fatal(err)
		}
		good := startPoll(t.Context(), m, proxy("good", NATUnrestricted, 8))
		synctest.Wait()

		type result struct {
			a   Answer
			err error
		}
		clientRes := make(chan result, 1)
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{NAT: NATUnrestricted, SDP: "o"})
			clientRes <- result{a, err}
		}()
		synctest.Wait() // client matched "gone" and waits
		<-m.matchedChan(gone)
		if err := m.abandon(gone, context.Canceled); !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
		r := <-good // the client moved on to the next proxy
		if r.err != nil || r.offer.SDP != "o" {
			t.Fatalf("good proxy got %+v", r)
		}
		if answered(m.Answer("gone", "x")) {
			t.Error("Answer for the abandoned session succeeded")
		}
		if !answered(m.Answer("good", "ans")) {
			t.Fatal("Answer failed")
		}
		if cr := <-clientRes; cr.err != nil || cr.a.SDP != "ans" {
			t.Fatalf("client got %+v", cr)
		}

		// With no other proxy, the client is told there are none.
		gone2 := proxy("gone2", NATUnrestricted, 0)
		if err := m.Enqueue(gone2); err != nil {
			t.Fatal(err)
		}
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{NAT: NATUnrestricted})
			clientRes <- result{a, err}
		}()
		<-m.matchedChan(gone2)
		_ = m.abandon(gone2, context.Canceled)
		if cr := <-clientRes; !errors.Is(cr.err, ErrNoProxies) {
			t.Fatalf("client got %+v, want ErrNoProxies", cr)
		}
	})
}

func TestPollContextCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		ctx, cancel := context.WithCancel(t.Context())
		res := startPoll(ctx, m, proxy("c", NATRestricted, 0))
		synctest.Wait()
		cancel()
		if r := <-res; !errors.Is(r.err, context.Canceled) {
			t.Fatalf("Poll = %v, want context.Canceled", r.err)
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Errorf("Stats = %+v, want empty (proxy left at once)", s)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		var results []<-chan pollResult
		for i := range 10 {
			p := proxy(fmt.Sprint(i), NAT(i%3), 0)
			p.Accepts = 1 // bridge 0 only
			results = append(results, startPoll(t.Context(), m, p))
		}
		// One proxy, the only one for bridge 5, is matched before Close:
		// it still gets its offer and its answer still reaches the client.
		mp := proxy("m", NATUnrestricted, 100)
		mp.Accepts = 1 << 5
		matchedRes := startPoll(t.Context(), m, mp)
		synctest.Wait()
		clientRes := make(chan Answer, 1)
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{SDP: "late", NAT: NATUnrestricted, Bridge: 5})
			if err != nil {
				t.Errorf("Rendezvous: %v", err)
			}
			clientRes <- a
		}()
		synctest.Wait()

		start := time.Now()
		m.Close()
		m.Close() // idempotent
		for _, res := range results {
			if r := <-res; !errors.Is(r.err, ErrNoMatch) {
				t.Errorf("Poll after Close = %v, want ErrNoMatch", r.err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("waiting polls ended %v after Close, want at once", d)
		}
		if r := <-matchedRes; r.err != nil || r.offer.SDP != "late" {
			t.Errorf("matched poll got %+v", r)
		}
		if _, err := m.Poll(t.Context(), proxy("new", NATUnrestricted, 0), hold); !errors.Is(err, ErrClosed) {
			t.Errorf("Poll after Close = %v, want ErrClosed", err)
		}
		if _, err := m.Rendezvous(t.Context(), ClientOffer{NAT: NATUnrestricted}); !errors.Is(err, ErrNoProxies) {
			t.Errorf("Rendezvous after Close = %v, want ErrNoProxies", err)
		}
		if !answered(m.Answer("m", "still delivered")) {
			t.Error("Answer after Close for a matched session failed")
		}
		if a := <-clientRes; a.SDP != "still delivered" {
			t.Errorf("answer = %q", a.SDP)
		}
	})
}

// TestConcurrent hammers the matcher from many goroutines (run with -race):
// every client gets exactly the answer its own proxy produced.
func TestConcurrent(t *testing.T) {
	synctest.Test(t, testConcurrent)
}

func testConcurrent(t *testing.T) {
	const proxies, clients = 400, 200
	m := New()
	ctx := t.Context()
	var wg sync.WaitGroup
	var mu sync.Mutex
	offersSeen := map[string]int{}
	for i := range proxies {
		wg.Go(func() {
			p := &Proxy{Sid: fmt.Sprint("p", i), NAT: NAT(i % 3), Clients: i % 5, Accepts: allMask}
			o, err := m.Poll(ctx, p, time.Hour)
			if errors.Is(err, ErrNoMatch) {
				return
			}
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			offersSeen[o.SDP]++
			mu.Unlock()
			if !answered(m.Answer(p.Sid, "answer-to-"+o.SDP)) {
				t.Errorf("answer for %s not delivered", o.SDP)
			}
		})
	}
	synctest.Wait()
	if s := m.Stats(); s.WaitingRestricted+s.WaitingUnrestricted != proxies {
		t.Fatalf("Stats = %+v, want %d waiting", s, proxies)
	}
	var cwg sync.WaitGroup
	for i := range clients {
		cwg.Go(func() {
			offer := fmt.Sprint("offer", i)
			a, err := m.Rendezvous(ctx, ClientOffer{SDP: offer, NAT: NATUnrestricted})
			if err != nil {
				t.Errorf("client %d: %v", i, err)
				return
			}
			if a.SDP != "answer-to-"+offer {
				t.Errorf("client %d got %q", i, a.SDP)
			}
		})
	}
	cwg.Wait()
	m.Close()
	wg.Wait()
	if len(offersSeen) != clients {
		t.Errorf("%d distinct offers reached proxies, want %d", len(offersSeen), clients)
	}
	for o, n := range offersSeen {
		if n != 1 {
			t.Errorf("offer %s reached %d proxies", o, n)
		}
	}
}

// answered drops Answer's proxy type.
func answered(_ string, ok bool) bool { return ok }

// TestNotifyEndAbandon drives polls that do not block in Wait, as the
// broker's parked polls do: Await hands back a still-waiting poll, Notify
// tells of a match or Close, End and Abandon finish the poll.
func TestNotifyEndAbandon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := New()
		woken := make(chan string, 4)
		enqueue := func(sid string) *Proxy {
			p := proxy(sid, NATUnrestricted, 0)
			if err := m.Enqueue(p); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Await(t.Context(), p, time.Millisecond); !errors.Is(err, ErrStillWaiting) {
				t.Fatalf("Await = %v, want ErrStillWaiting", err)
			}
			if !m.Notify(p, func() { woken <- sid }) {
				t.Fatal("Notify refused a waiting poll")
			}
			return p
		}

		if d := m.SinceLastMatch(); d >= 0 {
			t.Errorf("SinceLastMatch before any match = %v, want negative", d)
		}
		// A match: the client's offer is there once Notify's function ran.
		p := enqueue("a")
		client := make(chan error, 1)
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{SDP: "offer-a", NAT: NATRestricted})
			if err == nil && a.SDP != "answer-a" {
				err = fmt.Errorf("answer %q", a.SDP)
			}
			client <- err
		}()
		if sid := <-woken; sid != "a" {
			t.Fatalf("woken %q", sid)
		}
		if m.Notify(p, func() {}) {
			t.Error("Notify accepted a matched poll")
		}
		if o, err := m.End(p); err != nil || o.SDP != "offer-a" {
			t.Fatalf("End = %+v, %v", o, err)
		}
		if !answered(m.Answer("a", "answer-a")) {
			t.Fatal("answer not delivered")
		}
		if err := <-client; err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Second) // synctest's clock
		if d := m.SinceLastMatch(); d != time.Second {
			t.Errorf("SinceLastMatch = %v, want 1s", d)
		}

		// A match whose offer could not be delivered: Abandon after End
		// sends the client on to the next proxy.
		p = enqueue("b")
		next := enqueue("c")
		go func() {
			a, err := m.Rendezvous(t.Context(), ClientOffer{SDP: "offer-b", NAT: NATRestricted})
			if err == nil && a.SDP != "answer-c" {
				err = fmt.Errorf("answer %q", a.SDP)
			}
			client <- err
		}()
		if sid := <-woken; sid != "b" {
			t.Fatalf("woken %q, want the older poll b", sid)
		}
		if _, err := m.End(p); err != nil {
			t.Fatal(err)
		}
		cause := errors.New("write failed")
		if err := m.Abandon(p, cause); err != cause {
			t.Errorf("Abandon = %v", err)
		}
		if sid := <-woken; sid != "c" {
			t.Fatalf("woken %q, want c", sid)
		}
		if o, err := m.End(next); err != nil || o.SDP != "offer-b" {
			t.Fatalf("End = %+v, %v", o, err)
		}
		if !answered(m.Answer("c", "answer-c")) {
			t.Fatal("answer not delivered")
		}
		if err := <-client; err != nil {
			t.Fatal(err)
		}

		// Without a match: End takes the poll out; Close wakes the others.
		p = enqueue("d")
		if _, err := m.End(p); !errors.Is(err, ErrNoMatch) {
			t.Errorf("End = %v, want ErrNoMatch", err)
		}
		p = enqueue("e")
		gone := enqueue("f")
		if err := m.Abandon(gone, cause); err != cause {
			t.Errorf("Abandon = %v", err)
		}
		m.Close()
		if sid := <-woken; sid != "e" {
			t.Fatalf("woken %q, want e", sid)
		}
		if _, err := m.End(p); !errors.Is(err, ErrNoMatch) {
			t.Errorf("End after Close = %v, want ErrNoMatch", err)
		}
		if s := m.Stats(); s != (Stats{}) {
			t.Errorf("Stats = %+v, want empty", s)
		}
		select {
		case sid := <-woken:
			t.Errorf("unexpected wake of %q", sid)
		default:
		}
	})
}

// TestHooksAndAvailable: Changed fires when a pool's set of bridges
// changes, Available reports it by client NAT class, and Matched brackets
// a client's wait for the answer.
func TestHooksAndAvailable(t *testing.T) {
	m := New()
	changes := 0
	var matched []string
	released := 0
	m.SetHooks(Hooks{
		Changed: func() { changes++ },
		Matched: func(sid string) func() {
			matched = append(matched, sid)
			return func() { released++ }
		},
	})
	if r, u := m.Available(); r != 0 || u != 0 {
		t.Fatalf("empty matcher: %b %b", r, u)
	}
	restricted := &Proxy{Sid: "r", NAT: NATRestricted, Accepts: 0b01}
	unrestricted := &Proxy{Sid: "u", NAT: NATUnrestricted, Accepts: 0b10}
	for _, p := range []*Proxy{restricted, unrestricted} {
		if err := m.Enqueue(p); err != nil {
			t.Fatal(err)
		}
	}
	if r, u := m.Available(); r != 0b10 || u != 0b11 {
		t.Errorf("Available = %b %b, want 10 11", r, u)
	}
	if changes != 2 {
		t.Errorf("%d changes after two new classes", changes)
	}
	done := make(chan Answer)
	go func() {
		a, err := m.Rendezvous(context.Background(), ClientOffer{SDP: "o", NAT: NATRestricted, Bridge: 1})
		if err != nil {
			t.Error(err)
		}
		done <- a
	}()
	if _, err := m.Wait(context.Background(), unrestricted, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok := m.Answer("u", "a"); !ok {
		t.Fatal("answer not delivered")
	}
	if a := <-done; a.SDP != "a" {
		t.Errorf("answer %q", a.SDP)
	}
	if r, u := m.Available(); r != 0 || u != 0b01 {
		t.Errorf("after the match Available = %b %b, want 0 1", r, u)
	}
	if changes != 3 || len(matched) != 1 || matched[0] != "u" || released != 1 {
		t.Errorf("changes %d, matched %q, released %d", changes, matched, released)
	}
	_, _ = m.Wait(context.Background(), restricted, 0)
}
