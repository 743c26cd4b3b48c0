package proxy

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/pacing"
)

// linkSim is a path as the network lab's box makes it, on a fake clock:
// the proxy's pacer (package pacing's rule, at the send window's pacing
// rate), random loss, a bottleneck of rate bytes/s behind a drop-tail
// queue of queue bytes, then half the round trip plus jitter each way, in
// order (a datagram never overtakes the one before it). A datagram lost
// or dropped is sent again a round trip (plus repair) after it left, as
// SCTP would once the client's SACKs report it, through the pacer again.
type linkSim struct {
	rate   float64
	rtt    time.Duration
	jitter time.Duration // standard deviation, clipped at three
	loss   float64
	queue  int // bytes; 0: unlimited
	repair time.Duration
	noPace bool
	// heldUnseen reports no bytes held by the pacer, as the proxy's real
	// Pacer.Held does: pion's SCTP writes one datagram at a time into the
	// pacer and keeps the rest of its batch, already counted in
	// BufferedAmount, where the pacer cannot see it.
	heldUnseen bool
	// ackEvery, if set, delivers acknowledgements to the proxy only at
	// multiples of it, in bursts: a machine too busy to read them sooner.
	ackEvery time.Duration
	// wakeOnBatch reads BufferedAmount, once the window is full, only
	// when a batch fits again, as the proxy's writer does (it sleeps
	// until pion's low-threshold callback), instead of every millisecond;
	// in every other 100 ms, the machine is busy with other processes
	// and the woken writer runs busyDelay late.
	wakeOnBatch bool
	busyDelay   time.Duration
	trace       func(format string, args ...any)

	rng       *rand.Rand
	paceRate  float64
	paceNext  time.Time
	busy      time.Time // the bottleneck has sent what it holds
	fwdLast   time.Time // the last datagram's arrival at the client
	ackLast   time.Time // its acknowledgement's arrival at the proxy
	pending   []simPacket
	resends   []simPacket // at: when the datagram is sent again
	written   uint64
	acked     uint64
	datagrams uint64
	dropped   uint64 // by the bottleneck's queue
}

func (l *linkSim) jitterDelay() time.Duration {
	if l.jitter == 0 {
		return 0
	}
	j := l.rng.NormFloat64()
	j = max(-3, min(3, j))
	return time.Duration(j * float64(l.jitter))
}

// datagram sends one datagram of size bytes, written at now, and returns
// when it left the pacer.
func (l *linkSim) datagram(now time.Time, size int) time.Time {
	l.datagrams++
	depart := now
	if l.paceRate > 0 {
		start := l.paceNext
		if idle := now.Add(-pacing.Burst); start.Before(idle) && now.Sub(start) > pacing.CatchUp {
			start = idle
		}
		l.paceNext = start.Add(time.Duration(float64(size) / l.paceRate * float64(time.Second)))
		if start.After(now) {
			depart = start
		}
	}
	retry := simPacket{size: size, at: depart.Add(l.rtt + l.repair)}
	if l.loss > 0 && l.rng.Float64() < l.loss {
		l.resends = append(l.resends, retry)
		return depart
	}
	start := depart
	if l.busy.After(depart) {
		start = l.busy
	}
	if l.queue > 0 && float64(start.Sub(depart))*l.rate/float64(time.Second)+float64(size) > float64(l.queue) {
		l.dropped++
		l.resends = append(l.resends, retry)
		return depart
	}
	l.busy = start.Add(time.Duration(float64(size) / l.rate * float64(time.Second)))
	arrive := l.busy.Add(l.rtt/2 + l.jitterDelay())
	if arrive.Before(l.fwdLast) {
		arrive = l.fwdLast
	}
	l.fwdLast = arrive
	ack := arrive.Add(l.rtt/2 + l.jitterDelay())
	if l.ackEvery > 0 {
		ack = time.Unix(0, 0).Add((ack.Sub(time.Unix(0, 0)) + l.ackEvery - 1).Truncate(l.ackEvery))
	}
	if ack.Before(l.ackLast) {
		ack = l.ackLast
	}
	l.ackLast = ack
	l.pending = append(l.pending, simPacket{size: size, at: ack})
	return depart
}

// send sends n bytes written at now and returns when the first left.
func (l *linkSim) send(now time.Time, n int) time.Time {
	l.written += uint64(n)
	var first time.Time
	for n > 0 {
		size := min(n, sctpChunkPayload)
		n -= size
		if d := l.datagram(now, size); first.IsZero() {
			first = d
		}
	}
	return first
}

// buffered resends what is due and returns BufferedAmount at now.
func (l *linkSim) buffered(now time.Time) uint64 {
	due := l.resends[:0]
	var later []simPacket
	for _, r := range l.resends {
		if r.at.After(now) {
			later = append(later, r)
		} else {
			due = append(due, r)
		}
	}
	l.resends = later
	for _, r := range due {
		l.datagram(now, r.size)
	}
	kept := l.pending[:0]
	for _, pk := range l.pending {
		if pk.at.After(now) {
			kept = append(kept, pk)
		} else {
			l.acked += uint64(pk.size)
		}
	}
	l.pending = kept
	return l.written - l.acked
}

// carry drives a new send window over l for d, its randomness from seed,
// and returns the window and the rate the path carried, in B/s.
func (l *linkSim) carry(t *testing.T, seed uint64, d time.Duration) (*sendWindow, float64) {
	l.rng = rand.New(rand.NewPCG(seed, seed+1))
	if testing.Verbose() {
		l.trace = t.Logf
	}
	w := newSendWindow()
	start := time.Unix(1000, 0)
	now := l.run(w, start, d)
	return w, float64(l.acked) / now.Sub(start).Seconds()
}

// run drives w over l for d on a 1 ms clock as relayToClient does.
func (l *linkSim) run(w *sendWindow, start time.Time, d time.Duration) time.Time {
	now := start
	// A sleeping writer is woken by pion's callback at wokeAt, once
	// BufferedAmount falls to wake, and runs at runAt.
	var asleep bool
	var wake uint64
	var wokeAt, runAt time.Time
	for now.Sub(start) < d {
		now = now.Add(time.Millisecond)
		if asleep {
			if runAt.IsZero() && l.buffered(now) <= wake {
				wokeAt, runAt = now, now
				if now.UnixMilli()/100%2 == 1 {
					runAt = now.Add(l.busyDelay)
				}
			}
			if runAt.IsZero() || now.Before(runAt) {
				continue
			}
			w.woke(wokeAt)
			asleep, runAt = false, time.Time{}
		}
		if l.trace != nil && now.UnixMilli()%250 == 0 {
			l.trace("%6dms bw %8.0f minRTT %4dms win %7d buf %7d pace %8.0f st=%v dr=%v cyc=%d acked %d dropped %d",
				now.Sub(start).Milliseconds(), w.bandwidth(), w.minRTT.Milliseconds(), w.window(now), l.written-l.acked, l.paceRate, w.startup, w.drain, w.cycle, l.acked, l.dropped)
		}
		for {
			buffered := l.buffered(now)
			var held uint64
			if d := l.paceNext.Sub(now) - pacing.Burst; d > 0 && l.paceRate > 0 && !l.heldUnseen {
				held = uint64(d.Seconds() * l.paceRate)
			}
			w.acked(now, buffered, held)
			win := uint64(w.window(now))
			if !l.noPace {
				switch l.paceRate = w.pacingRate(now); {
				case l.paceRate >= pacing.MaxRate:
					l.paceRate = 0
				case l.paceRate > 0:
					l.paceRate = max(l.paceRate, pacing.MinRate)
				}
			}
			batch := min(uint64(downstreamMessageSize), max(win/4, sctpChunkPayload))
			if buffered+batch > win {
				asleep, wake = l.wakeOnBatch, win-batch
				break
			}
			n := int(min(win-buffered, downstreamMessageSize))
			w.wrote(l.send(now, n), n)
		}
	}
	return now
}

// TestSendWindowShortQueue: on the network lab's mobile path (a 5 Mbit/s
// bottleneck with a 50 ms queue behind a jittery 300 ms round trip and 3 %
// loss), paced at the send window's rate, the proxy keeps the bottleneck
// busy without overflowing its queue much more often than the path loses
// datagrams at random (its loss and 3 %: startup overshoots once, as
// BBR's does).
func TestSendWindowShortQueue(t *testing.T) {
	for _, tc := range []struct {
		name string
		link linkSim
	}{
		{"mobile", linkSim{rate: 625e3, rtt: 300 * time.Millisecond, jitter: 30 * time.Millisecond, loss: 0.03, queue: 625e3 / 20, repair: 30 * time.Millisecond}},
		{"mobile,wakes", linkSim{rate: 625e3, rtt: 300 * time.Millisecond, jitter: 30 * time.Millisecond, loss: 0.03, queue: 625e3 / 20, repair: 30 * time.Millisecond, wakeOnBatch: true, busyDelay: 6 * time.Millisecond}},
		{"20ms,5Mbit,wakes", linkSim{rate: 625e3, rtt: 20 * time.Millisecond, jitter: 2 * time.Millisecond, queue: 625e3 / 20, repair: 5 * time.Millisecond, wakeOnBatch: true, busyDelay: 6 * time.Millisecond}},
		{"mobile,no-jitter", linkSim{rate: 625e3, rtt: 300 * time.Millisecond, loss: 0.03, queue: 625e3 / 20, repair: 30 * time.Millisecond}},
		{"5MB/s,rtt=150ms,queue=20ms", linkSim{rate: 5e6, rtt: 150 * time.Millisecond, jitter: 5 * time.Millisecond, loss: 0.01, queue: 5e6 / 50, repair: 10 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.link
			w, rate := l.carry(t, 3, 30*time.Second)
			dropped := float64(l.dropped) / float64(l.datagrams)
			t.Logf("carried %.0f B/s of %.0f, bw estimate %.0f, minRTT %v, queue drops %.1f %% of %d datagrams",
				rate, l.rate, w.bandwidth(), w.minRTT, 100*dropped, l.datagrams)
			if rate < 0.65*l.rate {
				t.Errorf("carried %.0f B/s, want at least 65%% of %.0f", rate, l.rate)
			}
			if dropped > l.loss+0.03 {
				t.Errorf("the queue dropped %.1f %% of the datagrams, more than the path's random loss and 3 %%", 100*dropped)
			}
		})
	}
}

// TestSendWindowDrainEnds: after startup the window drains the queue
// startup built and goes back to the delivery rate within a few round
// trips, even though it cannot tell the bytes pion holds behind the pacer
// from those on the path. With the steady window (twice the
// bandwidth-delay product) during drain, the writer kept pion's queue
// full, the queue never drained, and a 150 ms path was paced at a third of
// its rate for seconds.
func TestSendWindowDrainEnds(t *testing.T) {
	l := linkSim{rate: 8e6, rtt: 150 * time.Millisecond, jitter: 5 * time.Millisecond, heldUnseen: true}
	l.rng = rand.New(rand.NewPCG(5, 6))
	if testing.Verbose() {
		l.trace = t.Logf
	}
	w := newSendWindow()
	start := time.Unix(1000, 0)
	var drained time.Duration
	for now := start; now.Sub(start) < 10*time.Second; {
		now = l.run(w, now, 10*time.Millisecond)
		if w.drain {
			drained += 10 * time.Millisecond
		}
	}
	if w.startup || w.drain {
		t.Fatalf("after 10 s: startup %v, drain %v", w.startup, w.drain)
	}
	if limit := 10 * l.rtt; drained > limit {
		t.Errorf("drained for %v, want at most %v (ten round trips)", drained, limit)
	}
	if rate := float64(l.acked) / 10; rate < 0.7*l.rate {
		t.Errorf("carried %.0f B/s, want at least 70%% of %.0f", rate, l.rate)
	}
}

// TestSendWindowAckBursts: when acknowledgements reach the proxy in bursts
// (a machine busy with dozens of users), the round trip under load is many
// times the minimum; the window keeps room for the bursts, as much as a
// user on a short path has (shortPathWindow), and carries most of the
// path's rate instead of shrinking round after round to minWindow, as it
// did for one user of fifty on loopback.
func TestSendWindowAckBursts(t *testing.T) {
	l := linkSim{rate: 4e6, rtt: 4 * time.Millisecond, ackEvery: 30 * time.Millisecond}
	w, rate := l.carry(t, 7, 10*time.Second)
	t.Logf("carried %.0f B/s of %.0f, bw estimate %.0f, minRTT %v", rate, l.rate, w.bandwidth(), w.minRTT)
	if rate < 0.5*l.rate {
		t.Errorf("carried %.0f B/s, want at least half of %.0f", rate, l.rate)
	}
}

// TestSendWindowStartupWakes: the writer reads BufferedAmount only when a
// batch fits again, and on a busy machine late, so a write's
// acknowledgement may be seen milliseconds after it came; startup must not
// take that lateness for a growing queue. It did: on the lab's 20 ms path
// startup ended at 3–5 MB/s.
func TestSendWindowStartupWakes(t *testing.T) {
	for _, tc := range []struct {
		name string
		link linkSim
	}{
		{"30MB/s,rtt=20ms", linkSim{rate: 30e6, rtt: 20 * time.Millisecond, jitter: time.Millisecond, wakeOnBatch: true, busyDelay: 6 * time.Millisecond}},
		{"10MB/s,rtt=50ms,loss=0.5%", linkSim{rate: 10e6, rtt: 50 * time.Millisecond, jitter: 2 * time.Millisecond, loss: 0.005, repair: 10 * time.Millisecond, wakeOnBatch: true, busyDelay: 6 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := tc.link
			l.rng = rand.New(rand.NewPCG(11, 12))
			w := newSendWindow()
			start := time.Unix(1000, 0)
			now := start
			for w.startup && now.Sub(start) < 5*time.Second {
				now = l.run(w, now, 5*time.Millisecond)
			}
			t.Logf("startup ended after %v at a bandwidth estimate of %.0f B/s", now.Sub(start), w.bandwidth())
			if bw := w.bandwidth(); w.startup || bw < 0.7*l.rate {
				t.Errorf("startup ended at a bandwidth estimate of %.0f B/s (startup %v), want at least 70%% of %.0f", bw, w.startup, l.rate)
			}
		})
	}
}
