package stats

import (
	"net/netip"
	"testing"
	"time"

	"github.com/flurrypt/flurry/messages"
)

func TestSnapshotHistory(t *testing.T) {
	start := time.Date(2026, 3, 4, 10, 0, 30, 0, time.UTC)
	clock := &fakeClock{t: start}
	r := newTestRecorder(t, Config{Now: clock.Now})
	poll := func(status string, n int) {
		for range n {
			r.ClientPoll(netip.Addr{}, messages.NATUnknown, MethodHTTP, status)
		}
	}
	poll(StatusMatched, 3) // 10:00
	poll(StatusDenied, 9)
	clock.Add(time.Minute) // 10:01
	poll(StatusTimeout, 1)
	clock.Add(2 * time.Hour) // 12:01: 10:00 and 10:01 are out of the hour, not the day
	poll(StatusMatched, 1)
	poll("bogus", 5) // counted nowhere

	s := r.Snapshot()
	if !s.Now.Equal(clock.Now()) {
		t.Errorf("Now %v", s.Now)
	}
	if len(s.LastHour) != 60 || len(s.LastDay) != 24 {
		t.Fatalf("%d minute and %d hour buckets", len(s.LastHour), len(s.LastDay))
	}
	if want := time.Date(2026, 3, 4, 12, 1, 0, 0, time.UTC); !s.LastHour[59].Start.Equal(want) {
		t.Errorf("last minute starts %v, want %v", s.LastHour[59].Start, want)
	}
	if want := time.Date(2026, 3, 4, 11, 2, 0, 0, time.UTC); !s.LastHour[0].Start.Equal(want) {
		t.Errorf("first minute starts %v, want %v", s.LastHour[0].Start, want)
	}
	if want := (Bucket{Start: s.LastHour[59].Start, Matched: 8}); s.LastHour[59] != want {
		t.Errorf("current minute %+v, want %+v", s.LastHour[59], want)
	}
	for _, b := range s.LastHour[:59] {
		if b.Matched+b.Denied+b.Timeout != 0 {
			t.Errorf("minute %v not empty: %+v", b.Start, b)
		}
	}
	if want := (Bucket{Start: s.LastHour[0].Start, Matched: 8}); s.HourTotal != want {
		t.Errorf("hour total %+v, want %+v", s.HourTotal, want)
	}
	if want := time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC); !s.LastDay[23].Start.Equal(want) {
		t.Errorf("current hour starts %v, want %v", s.LastDay[23].Start, want)
	}
	if want := (Bucket{Start: s.LastDay[21].Start, Matched: 8, Denied: 16, Timeout: 8}); s.LastDay[21] != want {
		t.Errorf("10:00 hour %+v, want %+v", s.LastDay[21], want)
	}
	if want := (Bucket{Start: s.LastDay[23].Start, Matched: 8}); s.LastDay[23] != want {
		t.Errorf("12:00 hour %+v, want %+v", s.LastDay[23], want)
	}
	// Sums are rounded after summing: 3+1 matched is 8, not 16.
	if want := (Bucket{Start: s.LastDay[0].Start, Matched: 8, Denied: 16, Timeout: 8}); s.DayTotal != want {
		t.Errorf("day total %+v, want %+v", s.DayTotal, want)
	}

	// A day later everything has aged out, even though the slots were
	// reused by nobody in between.
	clock.Add(24 * time.Hour)
	s = r.Snapshot()
	if s.HourTotal.Matched+s.HourTotal.Denied+s.HourTotal.Timeout+s.DayTotal.Matched+s.DayTotal.Denied+s.DayTotal.Timeout != 0 {
		t.Errorf("stale counts: hour %+v day %+v", s.HourTotal, s.DayTotal)
	}
	// A slot reused after wrapping around starts from zero.
	poll(StatusDenied, 1)
	if got := r.Snapshot().LastHour[59]; got.Denied != 8 || got.Matched != 0 {
		t.Errorf("reused slot %+v", got)
	}
}
