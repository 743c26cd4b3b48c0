package relay

import (
	"testing"
	"time"
)

// tick feeds w one tick with srtt, as a session that sent a full window
// per round trip (held back by its window).
func tick(w *sendWindow, srtt int32) int {
	w.sent.Add(uint64(w.wnd * segmentPayload * int(sendWindowTick/time.Millisecond) / int(srtt)))
	wnd, _ := w.next(srtt)
	return wnd
}

func TestSendWindowFollowsQueueing(t *testing.T) {
	w := newSendWindow()
	// The first round trip is the lowest seen: nothing is queued, the
	// window grows to its ceiling.
	for range 20 {
		tick(w, 10)
	}
	if w.wnd != maxSendWindow {
		t.Fatalf("window %d with nothing queued, want %d", w.wnd, maxSendWindow)
	}
	// 7 ms more than the lowest: within the 10 ms target, but more than
	// half of it; grows by an eighth.
	w.wnd = 1000
	if got := tick(w, 17); got != 1125 {
		t.Errorf("within the target: window %d, want 1125", got)
	}
	// 200 ms queued: shrinks by an eighth a tick, down to the floor.
	if got := tick(w, 210); got != 985 {
		t.Errorf("over the target: window %d, want 985", got)
	}
	for range 30 {
		tick(w, 210)
	}
	if w.wnd != minSendWindow {
		t.Errorf("window %d after a long queue, want the floor %d", w.wnd, minSendWindow)
	}
}

func TestSendWindowLongPathTarget(t *testing.T) {
	// On a 150 ms path, queueing of up to 175 ms is allowed (queueTarget):
	// the proxy's queue and SCTP's repairs count.
	w := newSendWindow()
	tick(w, 150)
	w.wnd = 800
	if got := tick(w, 210); got != 1200 {
		t.Errorf("60 ms queued on a 150 ms path: window %d, want 1200 (under half the target of 175 ms)", got)
	}
	if got := tick(w, 270); got != 1350 {
		t.Errorf("120 ms queued: window %d, want 1350", got)
	}
	if got := tick(w, 350); got != 1182 {
		t.Errorf("200 ms queued: window %d, want 1182", got)
	}
}

func TestQueueTarget(t *testing.T) {
	for _, c := range []struct{ base, want time.Duration }{
		{1 * time.Millisecond, minQueueTarget},
		{20 * time.Millisecond, 10 * time.Millisecond},
		{40 * time.Millisecond, 20 * time.Millisecond},
		{longPathRTT, longPathRTT / 2},
		{150 * time.Millisecond, 175 * time.Millisecond},
		{300 * time.Millisecond, 400 * time.Millisecond},
	} {
		if got := queueTarget(c.base); got != c.want {
			t.Errorf("queueTarget(%v) = %v, want %v", c.base, got, c.want)
		}
	}
}

func TestSendWindowIdleSessionKeepsWindow(t *testing.T) {
	w := newSendWindow()
	tick(w, 10)
	w.wnd = 500
	// Nothing sent since the last tick: a stale round trip changes nothing.
	if got, limited := w.next(900); got != 500 || limited {
		t.Errorf("idle: window %d (limited %v), want 500", got, limited)
	}
	if got, limited := w.next(0); got != 500 || limited {
		t.Errorf("no round trip: window %d (limited %v)", got, limited)
	}
	// Sending a quarter of the window per round trip: the window does not
	// hold the session back, so it does not grow.
	w.sent.Add(uint64(500 * segmentPayload / 4))
	if got, limited := w.next(10); got != 500 || limited {
		t.Errorf("not held back by the window: window %d (limited %v), want 500", got, limited)
	}
	// But it still shrinks when its packets queue.
	w.sent.Add(uint64(500 * segmentPayload / 4))
	if got, _ := w.next(400); got != 438 {
		t.Errorf("queueing, not held back: window %d, want 438", got)
	}
}

func TestSendWindowForgetsOldLowestRoundTrip(t *testing.T) {
	w := newSendWindow()
	tick(w, 5)
	// The path's round trip rises to 100 ms for good: after two periods
	// the 5 ms is forgotten and 100 ms counts as unqueued.
	for range 2 * rttMemoryTicks {
		tick(w, 100)
	}
	w.wnd = 1000
	if got := tick(w, 100); got != 1500 {
		t.Errorf("after the old minimum expired: window %d, want 1500", got)
	}
}

func TestSendBudgetShare(t *testing.T) {
	var b sendBudget
	// Nothing sent yet: the floor, shared.
	if got, want := b.share(0, 4), minSendBudget/(4*segmentPayload); got != want {
		t.Errorf("idle relay, 4 sessions: share %d segments, want %d", got, want)
	}
	if got := b.share(0, 0); got != maxSendWindow {
		t.Errorf("no session filling its window: share %d, want the ceiling", got)
	}
	// 400 MB/s for long enough: the budget is a tenth of a second of it.
	var down uint64
	for range 200 {
		down += 40e6 // per 100 ms tick
		b.share(down, 1)
	}
	down += 40e6
	got := b.share(down, 100)
	want := int(400e6 * sendBudgetDelay.Seconds() / float64(100*segmentPayload))
	if got < want*99/100 || got > want*101/100 {
		t.Errorf("400 MB/s, 100 sessions: share %d segments, want about %d", got, want)
	}
}

func TestSendWindowCap(t *testing.T) {
	w := newSendWindow()
	w.wnd = 1000
	if got := w.capAt(200); got != 200 {
		t.Errorf("capped at 200: %d", got)
	}
	if got := w.capAt(1); got != minSendWindow {
		t.Errorf("capped below the floor: %d, want %d", got, minSendWindow)
	}
	if got := w.capAt(5000); got != minSendWindow {
		t.Errorf("a higher cap raised the window to %d", got)
	}
}

func TestSessionIntervalFollowsActivity(t *testing.T) {
	w := newSendWindow()
	// A session that moves nothing gets the long interval at its idleTicks'th
	// tick.
	for i := range idleTicks - 1 {
		if iv, _ := w.nextInterval(); iv != busyInterval {
			t.Fatalf("tick %d: interval %d while just idle, want %d", i, iv, busyInterval)
		}
	}
	if iv, changed := w.nextInterval(); iv != idleInterval || !changed {
		t.Fatalf("idle: interval %d (changed %v), want %d", iv, changed, idleInterval)
	}
	if _, changed := w.nextInterval(); changed {
		t.Error("still idle: the interval changed again")
	}
	// Bytes from the client to the target make it busy at once, and so do
	// bytes the other way.
	w.received.Add(1)
	if iv, changed := w.nextInterval(); iv != busyInterval || !changed {
		t.Errorf("upload: interval %d (changed %v), want %d", iv, changed, busyInterval)
	}
	for range idleTicks {
		w.nextInterval()
	}
	w.sent.Add(1)
	if iv, _ := w.nextInterval(); iv != busyInterval {
		t.Errorf("download: interval %d, want %d", iv, busyInterval)
	}
}
