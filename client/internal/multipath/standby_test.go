package multipath

import (
	"testing"
	"testing/synctest"
	"time"
)

// standbyCarrier is a pipeCarrier that records what standing by tells it.
type standbyCarrier struct {
	*pipeCarrier
	told       chan bool // StandBy's arguments
	keepalives chan struct{}
}

func newStandbyCarrier() *standbyCarrier {
	return &standbyCarrier{pipeCarrier: newPipeCarrier(), told: make(chan bool, 8), keepalives: make(chan struct{}, 8)}
}

func (s *standbyCarrier) StandBy(standing bool) { s.told <- standing }
func (s *standbyCarrier) KeepAlive() error {
	s.keepalives <- struct{}{}
	return nil
}

// noPacket fails if car has sent a packet.
func noPacket(t *testing.T, car *standbyCarrier, what string) {
	t.Helper()
	select {
	case p := <-car.out:
		t.Fatalf("%s sent %q", what, p)
	default:
	}
}

// greeting is the probe the tests' watch makes: what a carrier sends
// first on taking over.
var greeting = []byte("probe")

// checkTookOver sends a packet through c and fails unless carrier in
// greets the far end and then carries it, and out sends nothing. Inside
// a synctest bubble.
func checkTookOver(t *testing.T, c *Conn, in, out *standbyCarrier) {
	t.Helper()
	c.WriteTo([]byte("up"), nil)
	synctest.Wait()
	if got := <-in.out; string(got) != string(greeting) {
		t.Fatalf("the new carrier's first packet %q, want the greeting", got)
	}
	if got := <-in.out; string(got) != "up" {
		t.Fatalf("the new carrier then sent %q", got)
	}
	noPacket(t, out, "the demoted carrier")
}

// standbyConn returns a Conn with one carrier serving, closed when the
// test ends, and two carriers not yet added. Inside a synctest bubble.
func standbyConn(t *testing.T) (c *Conn, a, b *standbyCarrier) {
	c = New(nil, nil, ReplyWatch{Timeout: time.Hour, ExpectsReply: func([]byte) bool { return false },
		Probe: func() []byte { return append([]byte(nil), greeting...) }}, 1)
	t.Cleanup(func() { c.Close() })
	return c, newStandbyCarrier(), newStandbyCarrier()
}

// TestStandbyTakesOverWhenServingDies: with serving 1 the second carrier
// sends nothing but keepalives; when the first dies it greets the far end
// and carries everything.
func TestStandbyTakesOverWhenServingDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, a, b := standbyConn(t)
		removed, err := c.Add(a)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Add(b); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		if c.Standing(a) || !c.Standing(b) {
			t.Fatalf("standing: a %v, b %v; want only b", c.Standing(a), c.Standing(b))
		}
		if told := <-b.told; !told {
			t.Fatal("b was not told to stand by")
		}
		for i := range 20 {
			c.WriteTo([]byte{byte(i)}, nil)
		}
		synctest.Wait()
		if len(a.out) != 20 {
			t.Fatalf("a sent %d of 20 packets", len(a.out))
		}
		noPacket(t, b, "the standby")
		time.Sleep(standbyKeepalive + time.Second)
		if len(b.keepalives) != 1 {
			t.Fatalf("%d keepalives after %v, want 1", len(b.keepalives), standbyKeepalive)
		}
		if len(a.keepalives) != 0 {
			t.Fatal("the carrier in use sent keepalives")
		}

		a.die()
		<-removed
		c.WriteTo([]byte("after"), nil)
		synctest.Wait()
		if told := <-b.told; told {
			t.Fatal("b was not told it carries")
		}
		if got := <-b.out; string(got) != string(greeting) {
			t.Fatalf("b's first packet %q, want the greeting", got)
		}
		if got := <-b.out; string(got) != "after" {
			t.Fatalf("b then sent %q", got)
		}
		if c.Standing(b) || c.Stats().Takeovers != 1 {
			t.Fatalf("b standing %v, takeovers %d", c.Standing(b), c.Stats().Takeovers)
		}
	})
}

// TestStandbyTakesOverWhenReached: a packet that arrives through the
// standby (the far end found the carrier in use silent) makes it carry,
// and the carrier that received nothing for the longest stand by.
func TestStandbyTakesOverWhenReached(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, a, b := standbyConn(t)
		c.Add(a)
		c.Add(b)
		a.in <- []byte("down through a")
		recvOne(t, c.recv)
		time.Sleep(time.Second)
		b.in <- []byte("down through b")
		recvOne(t, c.recv)
		synctest.Wait()
		if !c.Standing(a) || c.Standing(b) {
			t.Fatalf("standing: a %v, b %v; want only a", c.Standing(a), c.Standing(b))
		}
		checkTookOver(t, c, b, a)
	})
}

// TestDemote swaps the carrier in use with the standby, and does nothing
// without a standby.
func TestDemote(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, a, b := standbyConn(t)
		c.Add(a)
		if c.Demote(a) {
			t.Fatal("Demote without a standby")
		}
		c.Add(b)
		if c.Demote(b) {
			t.Fatal("Demote of the standby")
		}
		if !c.Demote(a) || !c.Standing(a) || c.Standing(b) {
			t.Fatalf("after Demote(a): a standing %v, b standing %v", c.Standing(a), c.Standing(b))
		}
		checkTookOver(t, c, b, a)
	})
}

// TestStandbyReachedPauses: a far end that sends through every carrier
// (Snowflake's server) swaps the roles at most once per takeoverPause,
// not at every packet.
func TestStandbyReachedPauses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, a, b := standbyConn(t)
		c.Add(a)
		c.Add(b)
		for i := range 10 {
			a.in <- []byte{byte(i)}
			b.in <- []byte{byte(i)}
			recvOne(t, c.recv)
			recvOne(t, c.recv)
			time.Sleep(100 * time.Millisecond)
		}
		if n := c.Stats().Takeovers; n != 1 {
			t.Fatalf("%d takeovers within %v, want 1", n, time.Second)
		}
		time.Sleep(takeoverPause)
		a.in <- []byte("again")
		recvOne(t, c.recv)
		synctest.Wait()
		if n := c.Stats().Takeovers; n != 2 || c.Standing(a) {
			t.Fatalf("%d takeovers after the pause, a standing %v; want 2, false", n, c.Standing(a))
		}
	})
}
