package proxy

import (
	"math/rand/v2"
	"testing"
	"time"
)

// simPath is a path modelled for sendWindow on a fake clock: a bottleneck
// of rate bytes/s in front of a fixed round trip; a lost packet is
// acknowledged one more round trip (plus repair) later, as SCTP's fast
// retransmission would deliver it, while the packets behind it are
// acknowledged (selectively) in time.
type simPath struct {
	rate   float64
	rtt    time.Duration
	loss   float64
	repair time.Duration

	rng     *rand.Rand
	busy    time.Time
	pending []simPacket // not yet acknowledged
	written uint64
	acked   uint64
}

type simPacket struct {
	size int
	at   time.Time
}

func (p *simPath) send(now time.Time, n int) {
	for n > 0 {
		size := min(n, sctpChunkPayload)
		n -= size
		start := now
		if p.busy.After(now) {
			start = p.busy
		}
		p.busy = start.Add(time.Duration(float64(size) / p.rate * float64(time.Second)))
		at := p.busy.Add(p.rtt)
		if p.loss > 0 && p.rng.Float64() < p.loss {
			at = at.Add(p.rtt + p.repair)
		}
		p.pending = append(p.pending, simPacket{size: size, at: at})
		p.written += uint64(size)
	}
}

// buffered is the DataChannel's BufferedAmount at now.
func (p *simPath) buffered(now time.Time) uint64 {
	kept := p.pending[:0]
	for _, pk := range p.pending {
		if pk.at.After(now) {
			kept = append(kept, pk)
		} else {
			p.acked += uint64(pk.size)
		}
	}
	p.pending = kept
	return p.written - p.acked
}

// run drives w over p for d on a 1 ms fake clock as relayToClient does
// (writes of up to a message whenever a batch fits); appLimited, if set,
// says at which times the relay has nothing to send. It returns the clock
// and the largest BufferedAmount seen after warm-up.
func (p *simPath) run(w *sendWindow, start time.Time, d time.Duration, appLimited func(time.Time) bool) (time.Time, uint64) {
	now := start
	var peak uint64
	for now.Sub(start) < d {
		now = now.Add(time.Millisecond)
		for {
			buffered := p.buffered(now)
			w.acked(now, buffered, 0)
			if now.Sub(start) > d/2 {
				peak = max(peak, buffered)
			}
			win := uint64(w.window(now))
			batch := min(uint64(downstreamMessageSize), max(win/4, sctpChunkPayload))
			if buffered+batch > win {
				break
			}
			if appLimited != nil && appLimited(now) {
				w.appLimited()
				break
			}
			n := int(min(win-buffered, downstreamMessageSize))
			p.send(now, n)
			w.wrote(now, n)
		}
	}
	return now, peak
}

func TestSendWindowInitial(t *testing.T) {
	w := newSendWindow()
	if got := w.window(time.Unix(0, 0)); got != initialWindow {
		t.Fatalf("window before any sample = %d, want %d", got, initialWindow)
	}
}

// TestSendWindowPaths: on a bottleneck the window settles near twice the
// bandwidth-delay product (one round trip of queue, no more); random loss
// does not shrink it.
func TestSendWindowPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		path simPath
	}{
		{"1MB/s,rtt=50ms", simPath{rate: 1e6, rtt: 50 * time.Millisecond}},
		{"625kB/s,rtt=20ms", simPath{rate: 625e3, rtt: 20 * time.Millisecond}},
		{"5MB/s,rtt=150ms,loss=1%", simPath{rate: 5e6, rtt: 150 * time.Millisecond, loss: 0.01, repair: 20 * time.Millisecond}},
		{"20MB/s,rtt=20ms,loss=0.5%", simPath{rate: 20e6, rtt: 20 * time.Millisecond, loss: 0.005, repair: 10 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.path
			p.rng = rand.New(rand.NewPCG(1, 2))
			w := newSendWindow()
			start := time.Unix(1000, 0)
			now, peak := p.run(w, start, 8*time.Second, nil)
			rate := float64(p.acked) / now.Sub(start).Seconds()
			if rate < 0.8*p.rate {
				t.Errorf("carried %.0f B/s, want at least 80%% of %.0f", rate, p.rate)
			}
			if bw := w.bandwidth(); bw < 0.9*p.rate || bw > 1.2*p.rate {
				t.Errorf("bandwidth estimate %.0f B/s, path %.0f", bw, p.rate)
			}
			if w.minRTT < p.rtt || w.minRTT > p.rtt+10*time.Millisecond {
				t.Errorf("minRTT %v, path %v", w.minRTT, p.rtt)
			}
			bdp := p.rate * p.rtt.Seconds()
			if limit := uint64(2.5*bdp) + downstreamMessageSize; peak > limit {
				t.Errorf("up to %d bytes queued, want at most %d (2.5 × BDP + a message)", peak, limit)
			}
			if w.startup {
				t.Error("still in startup")
			}
		})
	}
}

// TestSendWindowShortPath: below minPacedRTT (a LAN, loopback) the window
// is shortPathWindow, whatever the estimates, and nothing is paced.
func TestSendWindowShortPath(t *testing.T) {
	p := simPath{rate: 50e6, rtt: 300 * time.Microsecond, rng: rand.New(rand.NewPCG(1, 2))}
	w := newSendWindow()
	now, _ := p.run(w, time.Unix(1000, 0), 2*time.Second, nil)
	if w.minRTT >= minPacedRTT {
		t.Fatalf("minRTT %v, want below %v", w.minRTT, minPacedRTT)
	}
	if got := w.window(now); got != shortPathWindow {
		t.Errorf("window %d, want %d", got, shortPathWindow)
	}
	if r := w.pacingRate(now); r != 0 {
		t.Errorf("pacing rate %.0f B/s, want 0 (unpaced)", r)
	}
}

// TestSendWindowAppLimited: rounds in which the relay sent too little to
// fill the path do not lower the bandwidth estimate.
func TestSendWindowAppLimited(t *testing.T) {
	p := simPath{rate: 2e6, rtt: 40 * time.Millisecond}
	w := newSendWindow()
	start := time.Unix(1000, 0)
	now, _ := p.run(w, start, 3*time.Second, nil)
	before := w.bandwidth()
	// Then the relay sends one message every 100 ms, for 2 s: far below
	// the path's rate.
	now, _ = p.run(w, now, 2*time.Second, func(t time.Time) bool {
		return t.UnixMilli()%100 != 0
	})
	if after := w.bandwidth(); after < 0.9*before {
		t.Errorf("bandwidth estimate fell from %.0f to %.0f B/s while the relay was idle", before, after)
	}
	_ = now
}

// TestSendWindowProbeRTT: a round trip longer than the minimum for
// minRTTWindow sends the window to minWindow for probeRTTTime, after which
// the minimum is the probe's shortest sample.
func TestSendWindowProbeRTT(t *testing.T) {
	p := simPath{rate: 1e6, rtt: 30 * time.Millisecond}
	w := newSendWindow()
	start := time.Unix(1000, 0)
	now, _ := p.run(w, start, 2*time.Second, nil)
	// The path's round trip grows (a route change): samples stay above
	// the old minimum.
	p.rtt = 80 * time.Millisecond
	probed := false
	for end := now.Add(minRTTWindow + time.Second); now.Before(end); {
		now, _ = p.run(w, now, 10*time.Millisecond, nil)
		if w.window(now) == minWindow {
			probed = true
		}
	}
	if !probed {
		t.Fatal("no probe at minWindow within minRTTWindow")
	}
	now, _ = p.run(w, now, 2*time.Second, nil)
	if w.minRTT < 80*time.Millisecond || w.minRTT > 90*time.Millisecond {
		t.Errorf("minRTT after the probe = %v, want the new path's 80 ms", w.minRTT)
	}
	if got, want := float64(w.window(now)), 2*p.rate*p.rtt.Seconds(); got < 0.8*want || got > 1.3*want {
		t.Errorf("window after the probe = %.0f, want about %.0f", got, want)
	}
}

func TestSendWindowBounds(t *testing.T) {
	p := simPath{rate: 200e6, rtt: 300 * time.Millisecond}
	w := newSendWindow()
	now, peak := p.run(w, time.Unix(1000, 0), 5*time.Second, nil)
	if got := w.window(now); got != maxWindow || peak > maxWindow {
		t.Errorf("window %d, peak queue %d on a path far above maxWindow; want %d", got, peak, maxWindow)
	}
}

// TestSendWindowProbeRTTDrains: a probe measures the round trip only once
// the queue the window kept has drained, so that on a slow path (whose
// queue of one round trip takes longer to drain than a probe lasts) the
// minimum does not grow with every probe. It once did: each probe's
// samples were of writes that had waited in the queue, and on the lab's
// mobile path the minimum climbed from 320 ms to 5.8 s in 30 s, the window
// with it to 3.8 MB.
func TestSendWindowProbeRTTDrains(t *testing.T) {
	p := simPath{rate: 625e3, rtt: 300 * time.Millisecond}
	w := newSendWindow()
	start := time.Unix(1000, 0)
	now, _ := p.run(w, start, 45*time.Second, nil)
	if w.minRTT < p.rtt || w.minRTT > p.rtt+30*time.Millisecond {
		t.Errorf("minRTT after 45 s = %v, path %v", w.minRTT, p.rtt)
	}
	if got, bdp := w.window(now), p.rate*p.rtt.Seconds(); float64(got) > 2.5*bdp {
		t.Errorf("window after 45 s = %d, want at most 2.5 × BDP (%.0f)", got, 2.5*bdp)
	}
}
