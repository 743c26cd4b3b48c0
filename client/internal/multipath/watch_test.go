package multipath

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Packets in these tests: 'd' expects a reply (KCP data), 'a' does not
// (a bare acknowledgement).
var testWatch = ReplyWatch{
	Timeout:      2 * time.Second,
	ExpectsReply: func(p []byte) bool { return len(p) > 0 && p[0] == 'd' },
}

// swallow drops everything written to car until it is closed.
func swallow(car *pipeCarrier) {
	for {
		select {
		case <-car.out:
		case <-car.closed:
			return
		}
	}
}

// answer replies to every packet written to car, on car.
func answer(car *pipeCarrier) {
	for {
		select {
		case <-car.out:
			select {
			case car.in <- []byte("a"):
			case <-car.closed:
				return
			}
		case <-car.closed:
			return
		}
	}
}

func isClosed(car *pipeCarrier) bool {
	select {
	case <-car.closed:
		return true
	default:
		return false
	}
}

// TestReplyWatch runs one carrier through each rule, in fake time.
func TestReplyWatch(t *testing.T) {
	tests := []struct {
		name     string
		packet   string
		behave   func(*pipeCarrier)
		wantDrop bool
	}{
		{"data never answered is a blackout", "d", swallow, true},
		{"answered data keeps the carrier", "d", answer, false},
		{"unanswered acknowledgements are not a blackout", "a", swallow, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := New(nil, nil, testWatch, 0)
				defer c.Close()
				car := newPipeCarrier()
				if _, err := c.Add(car); err != nil {
					t.Fatal(err)
				}
				go tt.behave(car)
				go func() { // drain what the carrier receives
					buf := make([]byte, BufferSize)
					for {
						if _, _, err := c.ReadFrom(buf); err != nil {
							return
						}
					}
				}()
				c.WriteTo([]byte(tt.packet), nil)
				time.Sleep(testWatch.Timeout / 2)
				synctest.Wait()
				if isClosed(car) {
					t.Fatal("carrier dropped before the timeout")
				}
				for range 10 { // keep sending for five timeouts
					c.WriteTo([]byte(tt.packet), nil)
					time.Sleep(testWatch.Timeout / 2)
				}
				synctest.Wait()
				if got := isClosed(car); got != tt.wantDrop {
					t.Fatalf("dropped = %v, want %v", got, tt.wantDrop)
				}
				if tt.wantDrop && !errors.Is(car.reason, ErrNoReply) {
					t.Errorf("reason = %v, want ErrNoReply", car.reason)
				}
			})
		})
	}
}

// TestReplyWatchBlackHoleBesideWorkingCarrier: under sustained traffic a
// carrier that receives nothing while the other one receives is dropped,
// and the working one stays.
func TestReplyWatchBlackHoleBesideWorkingCarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil, nil, testWatch, 0)
		defer c.Close()
		hole, good := newPipeCarrier(), newPipeCarrier()
		for _, car := range []*pipeCarrier{hole, good} {
			if _, err := c.Add(car); err != nil {
				t.Fatal(err)
			}
		}
		go swallow(hole)
		go answer(good)
		go func() {
			buf := make([]byte, BufferSize)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		for range 500 { // 5 s at one packet per 10 ms
			c.WriteTo([]byte("d"), nil)
			time.Sleep(10 * time.Millisecond)
		}
		synctest.Wait()
		if !isClosed(hole) || !errors.Is(hole.reason, ErrNoReply) {
			t.Errorf("black hole: closed %v, reason %v", isClosed(hole), hole.reason)
		}
		if isClosed(good) {
			t.Error("working carrier dropped")
		}
	})
}

// TestReplyWatchFewPacketsAnsweredElsewhere: at low traffic a carrier whose
// answers happen to come back on the other carrier is kept.
func TestReplyWatchFewPacketsAnsweredElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := New(nil, nil, testWatch, 0)
		defer c.Close()
		quiet, other := newPipeCarrier(), newPipeCarrier()
		for _, car := range []*pipeCarrier{quiet, other} {
			if _, err := c.Add(car); err != nil {
				t.Fatal(err)
			}
		}
		go func() { // whatever either carrier sends is answered on other
			for {
				select {
				case <-quiet.out:
				case <-other.out:
				case <-c.Closed():
					return
				}
				select {
				case other.in <- []byte("a"):
				case <-c.Closed():
					return
				}
			}
		}()
		go func() {
			buf := make([]byte, BufferSize)
			for {
				if _, _, err := c.ReadFrom(buf); err != nil {
					return
				}
			}
		}()
		for range starvedAfter - 1 { // a keepalive every 10 s
			c.WriteTo([]byte("d"), nil)
			time.Sleep(10 * time.Second)
		}
		synctest.Wait()
		if isClosed(quiet) || isClosed(other) {
			t.Errorf("closed: quiet %v (%v), other %v (%v)", isClosed(quiet), quiet.reason, isClosed(other), other.reason)
		}
	})
}

// TestReplyWatchFloor: a Floor longer than Timeout postpones the drop.
func TestReplyWatchFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := testWatch
		w.Floor = func() time.Duration { return 4 * testWatch.Timeout }
		c := New(nil, nil, w, 0)
		defer c.Close()
		car := newPipeCarrier()
		if _, err := c.Add(car); err != nil {
			t.Fatal(err)
		}
		go swallow(car)
		c.WriteTo([]byte("d"), nil)
		time.Sleep(3 * testWatch.Timeout)
		synctest.Wait()
		if isClosed(car) {
			t.Fatal("dropped before the floor")
		}
		time.Sleep(2 * testWatch.Timeout)
		synctest.Wait()
		if !isClosed(car) {
			t.Fatal("not dropped after the floor")
		}
	})
}

// TestReplyWatchProbesSilentCarrier: the owner only receives (it sends
// bare acknowledgements), then the carrier falls silent. With Probe set a
// dead carrier gets one probe and is dropped; a live one answers it and is
// kept, and is not probed again while it stays quiet. Without Probe nothing
// is sent and nothing is dropped.
func TestReplyWatchProbesSilentCarrier(t *testing.T) {
	tests := []struct {
		name      string
		probe     bool
		answers   bool // the carrier answers the probe
		wantDrop  bool
		wantProbe uint64
	}{
		{"dead carrier, probe", true, false, true, 1},
		{"live carrier, probe", true, true, false, 1},
		{"dead carrier, no probe", false, false, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := testWatch
				if tt.probe {
					w.Probe = func() []byte { return []byte("p") }
				}
				c := New(nil, nil, w, 0)
				defer c.Close()
				car := newPipeCarrier()
				if _, err := c.Add(car); err != nil {
					t.Fatal(err)
				}
				go func() { // the far end: answers probes if told to
					for {
						select {
						case p := <-car.out:
							if string(p) == "p" && tt.answers {
								car.in <- []byte("w")
							}
						case <-car.closed:
							return
						}
					}
				}()
				go func() {
					buf := make([]byte, BufferSize)
					for {
						if _, _, err := c.ReadFrom(buf); err != nil {
							return
						}
					}
				}()
				for range 2 * probeAfter { // a download, acknowledged
					car.in <- []byte("d")
					c.WriteTo([]byte("a"), nil)
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(testWatch.Timeout / 4) // quiet, not yet silent
				synctest.Wait()
				if st := c.Stats(); st.Probes != 0 {
					t.Fatalf("probed after %v of quiet", testWatch.Timeout/4)
				}
				time.Sleep(5 * testWatch.Timeout)
				synctest.Wait()
				if got := isClosed(car); got != tt.wantDrop {
					t.Errorf("dropped = %v, want %v (reason %v)", got, tt.wantDrop, car.reason)
				}
				if tt.wantDrop && !errors.Is(car.reason, ErrNoReply) {
					t.Errorf("reason = %v, want ErrNoReply", car.reason)
				}
				if st := c.Stats(); st.Probes != tt.wantProbe {
					t.Errorf("%d probes, want %d", st.Probes, tt.wantProbe)
				}
			})
		})
	}
}

// TestGreetJoiningCarrier checks that a carrier joining a session the far
// end already knows sends a probe before anything else, and that the
// session's first carrier does not.
func TestGreetJoiningCarrier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := testWatch
		w.Probe = func() []byte { return []byte("p") }
		c := New(nil, nil, w, 0)
		defer c.Close()

		first := newPipeCarrier()
		if _, err := c.Add(first); err != nil {
			t.Fatal(err)
		}
		c.WriteTo([]byte("d"), nil)
		if got := string(recvOne(t, first.out)); got != "d" {
			t.Fatalf("the first carrier's first packet is %q, want the session's own %q", got, "d")
		}
		first.in <- []byte("a") // the far end now knows the session
		buf := make([]byte, BufferSize)
		if _, _, err := c.ReadFrom(buf); err != nil {
			t.Fatal(err)
		}
		first.die()
		synctest.Wait() // it has left the set
		if c.Len() != 0 {
			t.Fatalf("%d carriers after the only one died", c.Len())
		}

		c.WriteTo([]byte("d"), nil) // waits in the queue: no carrier
		next := newPipeCarrier()
		if _, err := c.Add(next); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"p", "d"} {
			if got := string(recvOne(t, next.out)); got != want {
				t.Fatalf("the joining carrier sent %q, want %q first", got, want)
			}
		}
		if st := c.Stats(); st.Probes != 1 {
			t.Errorf("%d probes, want 1", st.Probes)
		}
	})
}
