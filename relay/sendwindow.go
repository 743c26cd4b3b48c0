package relay

import (
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// Each session's KCP send window follows the queueing delay its client's
// packets meet, and its update interval whether it moves data (see
// busyInterval).
//
// A session's send window is what the relay holds for it: kcp-go's Write
// blocks once the segments sent and not yet acknowledged plus those not yet
// sent reach the window, so smux's send loop waits, the stream's write
// waits, and the relay stops reading from the target. Snowflake's window
// (turbotunnel.Window, 65 535 segments) never binds: each download keeps
// the whole of smux's 1 MiB stream window in the relay, and as much again
// in the client's outgoing queue once the path is slower than the relay,
// whatever the path needs. With thousands of downloads that is gigabytes,
// and the backlog's delay makes KCP resend what is only waiting.
//
// So every sendWindowTick the relay compares each sending session's
// smoothed round-trip time with the lowest it has seen lately: the
// difference is time its packets spent queued (in the client's outgoing
// queue, the carrier's socket, the proxy). Above the target the window
// shrinks by an eighth, below it grows (by half when the queue is nearly
// empty): the pipe stays full, since some packets always wait, and the
// relay holds about rate × (round trip + target) per download instead of a
// fixed megabyte. Only the relay's sender changes; nothing on the wire.
//
// A session that met a crowded relay from its first packet never sees the
// path's own round trip, and takes the crowd's delay for it. So the
// windows of the sessions that fill theirs also share a relay-wide budget:
// what the relay sends in sendBudgetDelay at its current rate (at least
// minSendBudget), in equal parts. The relay's memory for data in flight
// and the delay its own queues add (kcp-go's send workers, the clients'
// queues) then stay bounded however many download at once.
const (
	// sendWindowTick is how often windows are adjusted.
	sendWindowTick = 100 * time.Millisecond
	// initialSendWindow is a new session's window (88 KB). It grows by
	// half each tick while nothing queues, past smux's stream window
	// (turbotunnel.StreamBuffer, 762 full segments) within 0.7 s; starting
	// small, the first round trips measured are the path's, not those of a
	// queue the session filled itself.
	initialSendWindow = 64
	// minSendWindow is the smallest window (about 44 KB): an interactive
	// response goes out whole, and a download keeps some rate however
	// crowded the relay is.
	minSendWindow = 32
	// maxSendWindow is the largest: several streams' windows at once.
	maxSendWindow = 8192
	// minQueueTarget is the queueing delay a window may cause on a short
	// round trip (a client's KCP acknowledges every 10 ms, so less would
	// be noise); on longer ones, see queueTarget.
	minQueueTarget = 10 * time.Millisecond
	// longPathRTT is where queueTarget begins to allow a queue beyond half
	// the round trip.
	longPathRTT = 50 * time.Millisecond
	// busyInterval is KCP's update interval (ms) of a session that moves
	// data (twice Snowflake's 10 ms); idleInterval that of one that has
	// moved nothing for idleTicks ticks. A session's updates are three
	// quarters of the CPU an idle relay spends and a tenth of a loaded
	// one's: each runs a flush and a check of the session's state.
	// Sending does not wait for them (a write flushes, an acknowledgement
	// that frees the window flushes), and a retransmission is still made
	// when due (KCP adds the interval to its timeout); what the interval
	// delays is the acknowledgement of what the client sends, which the
	// client's own timeout (at least 100 ms) allows for, and for an idle
	// session only until the next tick sees it busy again.
	busyInterval = 20
	idleInterval = 100
	idleTicks    = 2
	// sendBudgetDelay and minSendBudget set the relay-wide budget.
	sendBudgetDelay = 100 * time.Millisecond
	minSendBudget   = 8 << 20
	// rateSmoothing is the weight of the newest tick in the relay's
	// smoothed send rate (about a second's memory).
	rateSmoothing = 0.1
	// rttMemoryTicks is how long the lowest round trip is remembered (10
	// to 20 s): it is the lower of this period's and the previous one's. A
	// path whose round trip grows for good (another proxy) gets its full
	// window back after that long.
	rttMemoryTicks = 100
)

// sendWindow is one session's window and KCP interval and what they were
// set from. The session's streams add to sent and received; the rest
// belongs to the relay's window goroutine, except applied.
type sendWindow struct {
	sent     atomic.Uint64 // bytes written to the session's streams so far
	received atomic.Uint64 // bytes of its streams written to their targets so far

	// Window (next).
	lastSent uint64   // sent at the last tick
	wnd      int      // the window wanted
	minRTT   [2]int32 // lowest round trip (ms) this period and the previous; 0: none
	ticks    int      // ticks into the current period
	set      int      // the window last given to KCP: the goroutine's copy of applied
	srtt     int32    // the smoothed round trip (ms) next was last given
	// applied is the window last given to KCP, which a silent session
	// gets back when woken; guarded by Relay.mu.
	applied int

	// Interval (nextInterval).
	idleSent, idleRecv uint64 // sent and received at the last tick
	idle               int    // ticks in a row with nothing sent or received
	interval           int    // KCP's update interval as last set, ms
}

func newSendWindow() *sendWindow {
	return &sendWindow{wnd: initialSendWindow, set: initialSendWindow, applied: initialSendWindow, interval: busyInterval}
}

// next returns the window this session wants for the next tick, given
// the smoothed round trip (ms), and whether it fills its window (sends at
// least half of it per round trip). A session that wrote nothing since the
// last tick keeps its window: its round trip is stale. One that does not
// fill its window (its client or the path is slower) keeps it too, unless
// its packets queue.
func (w *sendWindow) next(srtt int32) (wnd int, limited bool) {
	sent := w.sent.Load()
	delta := sent - w.lastSent
	w.lastSent = sent
	w.srtt = srtt
	if w.ticks++; w.ticks >= rttMemoryTicks {
		w.minRTT = [2]int32{0, w.minRTT[0]}
		w.ticks = 0
	}
	if delta == 0 || srtt <= 0 {
		return w.wnd, false
	}
	if w.minRTT[0] == 0 || srtt < w.minRTT[0] {
		w.minRTT[0] = srtt
	}
	base := w.minRTT[0]
	if w.minRTT[1] > 0 && w.minRTT[1] < base {
		base = w.minRTT[1]
	}
	target := queueTarget(time.Duration(base) * time.Millisecond)
	queued := time.Duration(srtt-base) * time.Millisecond
	// Bytes in flight that the rate implies: rate × round trip.
	inFlight := float64(delta) * float64(srtt) / float64(sendWindowTick/time.Millisecond)
	limited = inFlight >= float64(w.wnd*segmentPayload)/2
	switch {
	case queued > target:
		w.wnd -= w.wnd / 8
	case !limited:
	case queued < target/2:
		w.wnd += w.wnd / 2
	default:
		w.wnd += w.wnd / 8
	}
	w.wnd = min(max(w.wnd, minSendWindow), maxSendWindow)
	return w.wnd, limited
}

// nextInterval returns KCP's update interval for the next tick (ms) and
// whether it changed.
func (w *sendWindow) nextInterval() (int, bool) {
	sent, recv := w.sent.Load(), w.received.Load()
	if sent != w.idleSent || recv != w.idleRecv {
		w.idle = 0
	} else {
		w.idle++
	}
	w.idleSent, w.idleRecv = sent, recv
	want := busyInterval
	if w.idle >= idleTicks {
		want = idleInterval
	}
	changed := want != w.interval
	w.interval = want
	return want, changed
}

// queueTarget is the queueing delay a session's window may cause on a
// path whose lowest round trip is base: half of it, at least
// minQueueTarget; beyond longPathRTT, half of it plus what base exceeds
// longPathRTT by (175 ms at 150 ms, nearing one and a half round trips on
// longer paths). Part of what the relay measures as queue is the proxy's:
// its window lets a round trip of bytes wait in the DataChannel
// (proxy/sendwindow.go), and with loss the ordered channel holds segments
// behind each lost one for its repair, a round trip or more. With half a
// round trip, the relay's window shrank under that and held a 150 ms path
// with 1 % loss to 0.3-0.5 MB/s, where the proxy's window carried 0.5-0.8
// once the relay's allowed it. On a short path the excess is a few
// milliseconds and the half stays: there a larger target let the proxy's
// bursts into a slow bottleneck's queue, which dropped two or three times
// as many packets.
func queueTarget(base time.Duration) time.Duration {
	return max(minQueueTarget, base/2, base/2+base-longPathRTT)
}

// capAt lowers the window to at most c.
func (w *sendWindow) capAt(c int) int {
	w.wnd = min(w.wnd, max(c, minSendWindow))
	return w.wnd
}

// sendBudget is the relay-wide budget of the windows of the sessions that
// fill theirs.
type sendBudget struct {
	lastDown uint64
	rate     float64 // bytes per second, smoothed
}

// share returns each of limited sessions' share of the budget, in
// segments, given the bytes the relay's streams have sent so far.
func (b *sendBudget) share(down uint64, limited int) int {
	perTick := float64(down - b.lastDown)
	b.lastDown = down
	b.rate += rateSmoothing * (perTick*float64(time.Second/sendWindowTick) - b.rate)
	budget := max(float64(minSendBudget), b.rate*sendBudgetDelay.Seconds())
	if limited == 0 {
		return maxSendWindow
	}
	return int(budget / float64(limited*segmentPayload))
}

// segmentPayload is the payload of a full KCP segment (the MTU less KCP's
// 24-byte header).
const segmentPayload = turbotunnel.MTU - 24

// adjustSendWindows runs until the relay closes, adjusting every live
// session's window each sendWindowTick.
func (r *Relay) adjustSendWindows() {
	t := time.NewTicker(sendWindowTick)
	defer t.Stop()
	var (
		live   []*session
		budget sendBudget
	)
	for {
		select {
		case <-r.closing:
			return
		case <-t.C:
		}
		r.mu.Lock()
		for s := range r.sessions {
			live = append(live, s)
		}
		r.mu.Unlock()
		limited := 0
		for _, s := range live {
			if _, l := s.window.next(s.kcp.GetSRTT()); l {
				limited++
			}
			if iv, changed := s.window.nextInterval(); changed {
				s.kcp.SetNoDelay(-1, iv, -1, -1)
			}
		}
		share := budget.share(r.stats.streamDown.Load(), limited)
		for _, s := range live {
			wnd := s.window.capAt(share)
			if s.window.lastSent > 0 {
				// The session has sent: it may resend (resend.go). Before
				// KCP gets the window, so that the ring covers it.
				s.resend.update(time.Duration(s.window.srtt)*time.Millisecond, wnd)
			}
			if wnd == s.window.set {
				continue
			}
			s.window.set = wnd
			// Under r.mu, which orders it with silence: a silent session
			// keeps its window of one, and gets this one back when woken.
			r.mu.Lock()
			s.window.applied = wnd
			if !s.silent {
				s.kcp.SetWindowSize(wnd, 0)
			}
			r.mu.Unlock()
		}
		clear(live) // let ended sessions go
		live = live[:0]
	}
}
