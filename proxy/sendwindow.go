package proxy

import (
	"time"
)

// sendWindow is the proxy's own congestion control of downloads, above
// SCTP: it decides how many bytes may wait in a client's DataChannel
// (BufferedAmount: bytes queued in pion plus bytes sent and not yet
// acknowledged) from what the DataChannel tells it, in the manner of BBR's
// congestion window:
//
//	window = gain × bandwidth × minRTT
//
// bandwidth is the largest delivery rate of the last bwRounds round trips
// (bytes the client acknowledged over the round's duration), minRTT the
// shortest time from a write to its acknowledgement over minRTTWindow.
// With gain 2 the window keeps about one round trip of bytes queued at a
// bottleneck, no more: at a shared bottleneck the delivery rate stops
// growing while the round trip grows, so the window stops growing too and
// the queue that would make others' packets drop is not built. Random loss
// does not shrink it: lost bytes hold their place in BufferedAmount until
// SCTP resends them, but the rate of what arrives stays the same. SCTP's
// own window (Reno, halved on each loss) is held open by a large minimum
// (sctpMinCwnd) so that this window, not pion's, sets the rate.
//
// Bounding the DataChannel's queue by the path's round trip, not by a fixed
// 512 KiB, also keeps the queue out of KCP's round trip: the relay's KCP no
// longer resends segments that are only waiting in the proxy.
//
// The window starts at initialWindow and grows by startupGain per round
// trip until the delivery rate stops growing (startup); every
// minRTTWindow without a new minimum it drops to minWindow until the queue
// it kept has drained, then for probeRTTTime more, so that a queue it built
// itself does not pass for the path's round trip. It changes only when the
// proxy sends, nothing on the wire. The zero value is not ready: use
// newSendWindow. Not safe for concurrent use: the DataChannel's writer
// owns it.
type sendWindow struct {
	written         uint64        // bytes written to the DataChannel
	delivered       uint64        // bytes the client acknowledged: written − BufferedAmount
	deliveredAt     time.Time     // when delivered last grew
	deliveredSent   time.Time     // when the newest acknowledged mark was written
	appLimitedUntil uint64        // samples are app-limited until delivered passes it
	roundMax        float64       // the round's largest rate sample
	roundMaxLimited bool          // whether all of the round's samples were app-limited
	roundMinRTT     time.Duration // the round's shortest queue sample (rttSample); 0: none
	roundRTTs       int           // the round's round trip samples
	lastReading     time.Time     // when acked last read BufferedAmount
	wokeAt          time.Time     // when pion's callback woke the writer (woke)

	// Writes not yet acknowledged, for round trip samples: a ring, oldest
	// first; when full, the newest mark is overwritten (fewer samples).
	marks        [rttMarks]writeMark
	mhead, mlen  int
	minRTT       time.Duration // 0: no sample yet
	minRTTAt     time.Time     // when minRTT was sampled
	probeStart   time.Time     // when the current probe began; zero: not probing
	probeFrom    uint64        // the probe samples writes that end past this offset
	probeRTTEnd  time.Time     // zero until the queue has drained; then the probe's end
	probeRTTMin  time.Duration // the shortest sample of the current probe
	probeRTTSeen bool

	// Rounds: a round ends when the client has acknowledged what was
	// written when it began.
	inRound  bool
	roundEnd uint64
	bw       [bwRounds]float64 // the largest rate sample of each recent round
	bwNext   int

	startup      bool
	fullBw       float64
	fullBwRounds int

	// Acknowledgement aggregation (BBR's extra_acked): how far the
	// client's acknowledgements ran ahead of the delivery rate in the
	// current epoch, and the largest such excess of the last
	// 2 × extraAckedRounds rounds, in two slots.
	ackEpochStart time.Time
	ackEpochAcked uint64
	extraAcked    [2]uint64
	extraSlot     int
	extraRounds   int

	// Pacing (pacingRate): after startup, drain until what is in flight
	// is one bandwidth-delay product, then cycle through probeBWGains,
	// one minimum round trip each.
	drain      bool
	cycle      int
	cycleStart time.Time
}

type writeMark struct {
	end uint64    // the offset whose acknowledgement completes the mark
	at  time.Time // when it was written
	// The delivery state when it was written, for its rate sample (BBR's
	// delivery rate estimation): bytes delivered, when the last of them
	// was, and when that last delivered byte had been written.
	delivered     uint64
	deliveredAt   time.Time
	deliveredSent time.Time
	appLimited    bool // written while a bubble of too little data was in flight
}

const (
	// rttMarks bounds the writes remembered for round trip samples.
	rttMarks = 64
	// bwRounds is how many round trips the bandwidth estimate remembers.
	bwRounds = 10
	// minRTTWindow is how long a round trip sample stays the minimum.
	minRTTWindow = 10 * time.Second
	// probeRTTTime is how long the window stays at minWindow to measure
	// the round trip without the proxy's own queue, once that queue has
	// drained; probeDrainLimit how long a probe waits for it to drain
	// (a client that stopped acknowledging) before it gives up and keeps
	// the old minimum.
	probeRTTTime    = 200 * time.Millisecond
	probeDrainLimit = 2 * time.Second

	startupGain = 2.89
	steadyGain  = 2.0
	// drainGain is the window while draining: one bandwidth-delay
	// product. Drain ends when no more than that is in flight, and the
	// window cannot tell what has left the proxy from what pion's SCTP
	// still holds behind the pacer (Pacer.Held sees only the datagram it
	// is spacing), so a larger window would keep refilling pion's queue
	// and drain would not end.
	drainGain = 1.0

	// startupPacingGain paces startup at 2/ln 2 times the delivery rate,
	// which doubles it each round trip; drainPacingGain empties the
	// queue startup built.
	startupPacingGain = 2.89
	drainPacingGain   = 1 / startupPacingGain

	// initialWindow is the window before any measurement: about 28 SCTP
	// packets, below a 5 Mbit/s bottleneck's 50 ms queue plus its
	// bandwidth-delay product at 20 ms.
	initialWindow = 28 * sctpChunkPayload
	// minWindow is the smallest window: a few packets, so that the client
	// acknowledges at once (it delays SACKs only for a lone packet).
	minWindow = 8 * sctpChunkPayload
	// maxWindow bounds what one client's DataChannel holds: 16 MB/s at
	// 150 ms with gain 2; a client's SCTP receive window (1 MiB for pion
	// and browsers) usually limits it first.
	maxWindow = 4 << 20
	// sctpMinCwnd holds pion's SCTP congestion window at least this
	// large, so that SCTP sends whatever the window lets into the
	// DataChannel.
	sctpMinCwnd = maxWindow
)

// shortPathWindow is the window below minPacedRTT: 128 KiB is 128 MB/s at
// a millisecond's round trip, more than a proxy moves; more would only
// wait in pion's send queue, in the volunteer's memory (with the window
// at maxWindow there, a proxy serving one download on loopback peaked at
// 32 MiB of RSS instead of 24, and its client at 37 MiB instead of 26).
const shortPathWindow = 128 << 10

// minPacedRTT is the shortest round trip at which the window paces, ends
// startup on a growing round trip and limits anything: below it (a LAN,
// loopback) no bottleneck queue is overrun by the window's bursts, and the
// scheduling of a busy machine moves round trips by more than a queue
// would.
const minPacedRTT = 2 * time.Millisecond

// probeBWGains are the pacing gains of the steady state, one minimum round
// trip each (BBR's ProbeBW): a round at 1.25 finds bandwidth that has
// become free, the next at 0.75 drains the queue that probe built, six at
// the delivery rate.
var probeBWGains = [...]float64{1.25, 0.75, 1, 1, 1, 1, 1, 1}

func newSendWindow() *sendWindow {
	return &sendWindow{startup: true}
}

// wrote records that n more bytes were written to the DataChannel, to
// leave the proxy from sent on: when they were written, or later if the
// pacer holds them (Pacer.Next), so that the round trip samples do not
// count the time they waited there.
func (w *sendWindow) wrote(sent time.Time, n int) {
	now := sent
	if n <= 0 {
		return
	}
	w.written += uint64(n)
	if !w.inRound {
		w.beginRound(now)
	}
	if w.mlen == rttMarks {
		w.mlen-- // forget the newest
	}
	// The sample is the round trip of the write's first packet, not of
	// its last, which waits for the others at a slow bottleneck.
	if w.deliveredAt.IsZero() {
		w.deliveredAt, w.deliveredSent = now, now
	}
	w.marks[(w.mhead+w.mlen)%rttMarks] = writeMark{
		end:           w.written - uint64(n) + uint64(min(n, sctpChunkPayload)),
		at:            now,
		delivered:     w.delivered,
		deliveredAt:   w.deliveredAt,
		deliveredSent: w.deliveredSent,
		appLimited:    w.appLimitedUntil != 0 && w.appLimitedUntil >= w.delivered,
	}
	w.mlen++
}

// appLimited records that the writer had nothing to write although the
// window had room: this round's rate is what the relay sent, not what the
// path carries.
func (w *sendWindow) appLimited() {
	w.appLimitedUntil = max(w.written, 1)
}

// woke records that pion's low-threshold callback woke the writer at t:
// the acknowledgement that crossed the threshold came then, however late
// the writer runs after it.
func (w *sendWindow) woke(t time.Time) { w.wokeAt = t }

// acked updates the estimates from the DataChannel's BufferedAmount at now,
// of which held bytes have not left the proxy yet (the pacer holds them).
func (w *sendWindow) acked(now time.Time, buffered, held uint64) {
	// Acknowledgements new in this reading came after the last reading,
	// and about when the callback woke the writer, if it did since.
	seen := w.lastReading
	if w.wokeAt.After(seen) {
		seen = w.wokeAt
	}
	w.lastReading, w.wokeAt = now, time.Time{}
	if buffered > w.written {
		buffered = w.written
	}
	if w.probing() && w.probeRTTEnd.IsZero() && buffered <= minWindow {
		// The queue has drained: from here the probe's samples are the
		// path's round trip, not the time writes waited in the queue.
		w.probeRTTEnd, w.probeFrom = now.Add(probeRTTTime), w.written
	}
	delivered := w.written - buffered
	if delivered <= w.delivered {
		return
	}
	w.aggregation(now, delivered-w.delivered)
	w.delivered, w.deliveredAt = delivered, now
	for w.mlen > 0 && w.marks[w.mhead].end <= delivered {
		m := &w.marks[w.mhead]
		w.rttSample(now, now.Sub(m.at), max(seen.Sub(m.at), 0), w.probing() && !w.probeRTTEnd.IsZero() && m.end > w.probeFrom)
		w.deliveredSent = m.at
		// The rate since the mark was written, over the longer of the
		// send and the acknowledgement intervals, so that a burst of
		// acknowledgements does not pass for a fast path.
		if interval := max(now.Sub(m.deliveredAt), m.at.Sub(m.deliveredSent)); interval > 0 {
			w.rateSample(float64(delivered-m.delivered)/interval.Seconds(), m.appLimited)
		}
		w.mhead = (w.mhead + 1) % rttMarks
		w.mlen--
	}
	if w.inRound && delivered >= w.roundEnd {
		w.endRound(now)
	}
	if inflight := w.written - w.delivered - min(held, w.written-w.delivered); w.drain && float64(inflight) <= w.bandwidth()*w.minRTT.Seconds() {
		w.drain = false
		w.cycle, w.cycleStart = 0, now
	}
}

// probing reports whether the window is at minWindow to measure the round
// trip.
func (w *sendWindow) probing() bool { return !w.probeStart.IsZero() }

// rttSample records a round trip sample, rtt, and the same write's round
// trip dated from seen (acked), queued; probe says whether it counts for
// the current probe. The minimum takes rtt, which is never short; startup's
// test of a growing queue takes queued, so that how late the writer ran
// does not pass for a queue: on the lab's busy machine it ended startup on
// a 20 ms path at 3–5 MB/s.
func (w *sendWindow) rttSample(now time.Time, rtt, queued time.Duration, probe bool) {
	if rtt <= 0 {
		rtt = time.Microsecond
	}
	if w.roundRTTs == 0 || queued < w.roundMinRTT {
		w.roundMinRTT = queued
	}
	w.roundRTTs++
	if probe {
		if !w.probeRTTSeen || rtt < w.probeRTTMin {
			w.probeRTTMin, w.probeRTTSeen = rtt, true
		}
	}
	if w.minRTT == 0 || rtt <= w.minRTT {
		w.minRTT, w.minRTTAt = rtt, now
	}
}

func (w *sendWindow) rateSample(rate float64, appLimited bool) {
	if rate > w.roundMax || (w.roundMaxLimited && !appLimited) {
		w.roundMax, w.roundMaxLimited = rate, appLimited
	}
}

func (w *sendWindow) beginRound(now time.Time) {
	w.inRound = true
	w.roundEnd = w.written
	w.roundMax, w.roundMaxLimited = 0, true
	w.roundMinRTT, w.roundRTTs = 0, 0
	if w.appLimitedUntil < w.delivered {
		w.appLimitedUntil = 0
	}
}

func (w *sendWindow) endRound(now time.Time) {
	w.inRound = false
	if w.extraRounds++; w.extraRounds >= extraAckedRounds {
		w.extraRounds, w.extraSlot = 0, 1-w.extraSlot
		w.extraAcked[w.extraSlot] = 0
	}
	// A round the relay did not fill says only that the path carries at
	// least that much.
	if w.roundMax > 0 && (!w.roundMaxLimited || w.roundMax > w.bandwidth()) {
		w.bw[w.bwNext] = w.roundMax
		w.bwNext = (w.bwNext + 1) % bwRounds
	}
	if w.startup && w.queueGrew() {
		// The queue at the bottleneck grows: the path is full (HyStart's
		// delay signal), before its queue overflows.
		w.startup, w.drain = false, true
	}
	if w.startup && !w.roundMaxLimited {
		if bw := w.bandwidth(); bw >= 1.25*w.fullBw {
			w.fullBw, w.fullBwRounds = bw, 0
		} else if w.fullBwRounds++; w.fullBwRounds >= 3 {
			w.startup, w.drain = false, true
		}
	}
	if w.written > w.delivered {
		w.beginRound(now)
	}
}

// Startup ends early when a round's shortest round trip exceeds the
// minimum by startupDelayExit (an eighth of the minimum, within bounds):
// the queue at the bottleneck is growing. A round needs startupRTTSamples
// samples for its shortest to say so over the path's jitter.
const (
	startupRTTSamples    = 8
	startupDelayExitMin  = 4 * time.Millisecond
	startupDelayExitMax  = 16 * time.Millisecond
	startupDelayFraction = 8
)

// queueGrew reports whether the round that ends says the bottleneck's
// queue is growing.
func (w *sendWindow) queueGrew() bool {
	if w.roundRTTs < startupRTTSamples || w.minRTT < minPacedRTT {
		return false
	}
	threshold := min(max(w.minRTT/startupDelayFraction, startupDelayExitMin), startupDelayExitMax)
	return w.roundMinRTT > w.minRTT+threshold
}

// bandwidth is the largest delivery rate of the remembered rounds, in
// bytes per second.
func (w *sendWindow) bandwidth() float64 {
	var m float64
	for _, r := range w.bw {
		m = max(m, r)
	}
	return m
}

// window returns how many bytes may be in the DataChannel at now.
func (w *sendWindow) window(now time.Time) int {
	if w.minRTT > 0 && w.minRTT < minPacedRTT {
		// No queue to keep short: sized for loopback's round trip the
		// window held a few packets, every batch waited for the
		// client's acknowledgements, and a chain on one machine moved
		// a fifth less at more CPU per MB.
		return shortPathWindow
	}
	if w.probing() {
		switch {
		case !w.probeRTTEnd.IsZero() && !w.probeRTTEnd.After(now):
			// A probe ended: its shortest sample is the new minimum,
			// even if longer than the old one (the path changed);
			// without a sample (nothing was sent), the old minimum
			// stands for another period rather than probe again at
			// once.
			if w.probeRTTSeen {
				w.minRTT = w.probeRTTMin
			}
			w.minRTTAt, w.probeStart = now, time.Time{}
		case w.probeRTTEnd.IsZero() && now.Sub(w.probeStart) > probeDrainLimit:
			// The queue did not drain: nothing to measure.
			w.minRTTAt, w.probeStart = now, time.Time{}
		}
	}
	if w.minRTT > 0 && !w.startup && !w.probing() && now.Sub(w.minRTTAt) > minRTTWindow {
		// The minimum is stale: probe at minWindow.
		w.probeStart = now
		w.probeRTTEnd, w.probeRTTSeen = time.Time{}, false
	}
	if w.probing() {
		return minWindow
	}
	bw := w.bandwidth()
	if w.minRTT == 0 || bw == 0 {
		return initialWindow
	}
	if w.startup {
		// The first samples come from the relay's first few small
		// messages and say little: startup never falls below where it
		// began.
		win := int(startupGain * bw * w.minRTT.Seconds())
		return min(max(win, initialWindow), maxWindow)
	}
	if w.drain {
		return min(max(int(drainGain*bw*w.minRTT.Seconds()), minWindow), maxWindow)
	}
	win := int(steadyGain * bw * w.minRTT.Seconds())
	if win < shortPathWindow {
		win = min(win+w.aggregationAllowance(bw), shortPathWindow)
	}
	return min(max(win, minWindow), maxWindow)
}

// Acknowledgements that come in bursts (a client, or this proxy, busy
// with other work: dozens of users on one machine) make the round trip
// under load far longer than the minimum, and a window of twice the
// bandwidth-delay product then caps the rate below what the path
// carries; the next rounds measure that lower rate and the window
// shrinks again, down to minWindow: one user of fifty starved so on
// loopback. As BBR does, a window below shortPathWindow (after startup
// and drain) also holds the largest excess of acknowledgements over the
// delivery rate seen in an epoch of the last 10 rounds, at most
// maxExtraAcked of the rate, up to shortPathWindow: what a user on a short
// path has anyway. A larger window has room enough, and more would only
// hold more of the volunteer's memory.
const (
	extraAckedRounds = 5
	// maxExtraAcked is half of Linux BBR's bound: room for a few tens of
	// milliseconds of late reading is what the starving user needed, and
	// more would let larger bursts into a slow bottleneck's short queue
	// (a 5 Mbit/s link 20 ms away whose queue holds 50 ms).
	maxExtraAcked = 50 * time.Millisecond
	// ackEpochReset bounds an epoch: after this many bytes acknowledged
	// it starts again, so that a long one does not average a burst away.
	ackEpochReset = 1 << 20
)

// aggregation records that n more bytes were acknowledged at now.
func (w *sendWindow) aggregation(now time.Time, n uint64) {
	bw := w.bandwidth()
	if w.ackEpochStart.IsZero() {
		w.ackEpochStart = now
	}
	expected := uint64(bw * now.Sub(w.ackEpochStart).Seconds())
	if w.ackEpochAcked <= expected || w.ackEpochAcked+n >= ackEpochReset {
		// The acknowledgements are no faster than the rate: a new epoch.
		w.ackEpochStart, w.ackEpochAcked, expected = now, 0, 0
	}
	w.ackEpochAcked += n
	if extra := w.ackEpochAcked - expected; extra > w.extraAcked[w.extraSlot] {
		w.extraAcked[w.extraSlot] = extra
	}
}

// aggregationAllowance is what the window holds beyond the bandwidth-delay
// product for acknowledgements that come in bursts, given the bandwidth.
func (w *sendWindow) aggregationAllowance(bw float64) int {
	extra := max(w.extraAcked[0], w.extraAcked[1])
	return int(min(float64(extra), bw*maxExtraAcked.Seconds()))
}

// pacingRate returns the rate in bytes per second at which what is
// written should leave the proxy (package pacing), or zero before the
// first estimate: BBR's pacing, gain times the delivery rate, the gain
// after startup and drain cycling through probeBWGains.
func (w *sendWindow) pacingRate(now time.Time) float64 {
	bw := w.bandwidth()
	if bw == 0 || w.minRTT < minPacedRTT {
		return 0
	}
	switch {
	case w.probing():
		return bw
	case w.startup:
		return max(startupPacingGain*bw, float64(initialWindow)/w.minRTT.Seconds())
	case w.drain:
		return drainPacingGain * bw
	}
	if w.cycleStart.IsZero() {
		w.cycleStart = now
	}
	if now.Sub(w.cycleStart) >= w.minRTT {
		w.cycle = (w.cycle + 1) % len(probeBWGains)
		w.cycleStart = now
	}
	return probeBWGains[w.cycle] * bw
}
