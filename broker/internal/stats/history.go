package stats

import "time"

// Bucket counts client outcomes over one time slot. Counts are rounded up
// to multiples of 8, like every exported count that describes clients.
type Bucket struct {
	Start   time.Time // start of the slot (UTC)
	Matched int       // clients that got an answer
	Denied  int       // clients turned away: no proxy available
	Timeout int       // clients whose proxy did not answer in time
}

// Snapshot is what the status page shows.
type Snapshot struct {
	Now       time.Time
	Available Available // proxies available now
	LastHour  []Bucket  // 60 one-minute slots, oldest first; the last is the current minute
	LastDay   []Bucket  // 24 one-hour slots, oldest first; the last is the current hour
	HourTotal Bucket    // sums over LastHour (rounded after summing)
	DayTotal  Bucket    // sums over LastDay (rounded after summing)
}

// ring counts client outcomes per time slot for the last len(slots) slots.
// A slot is reused when time reaches it again: its stamp (slot number since
// the Unix epoch) tells whether its counts are current.
type ring struct {
	width time.Duration
	slots []slot
}

type slot struct {
	stamp  int64
	counts [3]uint64 // by statusMatched, statusDenied, statusTimeout
}

func newRing(width time.Duration, n int) ring {
	slots := make([]slot, n)
	for i := range slots {
		slots[i].stamp = -1
	}
	return ring{width: width, slots: slots}
}

func (r *ring) stamp(t time.Time) int64 {
	return t.UnixNano() / int64(r.width)
}

func (r *ring) slot(stamp int64) *slot {
	n := int64(len(r.slots))
	return &r.slots[((stamp%n)+n)%n]
}

func (r *ring) add(now time.Time, s statusIdx) {
	if s >= statusOther {
		return
	}
	stamp := r.stamp(now)
	sl := r.slot(stamp)
	if sl.stamp != stamp {
		*sl = slot{stamp: stamp}
	}
	sl.counts[s]++
}

// buckets returns the ring's slots up to now, oldest first, and their
// total, rounded.
func (r *ring) buckets(now time.Time) ([]Bucket, Bucket) {
	cur := r.stamp(now)
	n := int64(len(r.slots))
	out := make([]Bucket, n)
	var sum [3]uint64
	for i := range n {
		stamp := cur - n + 1 + i
		b := &out[i]
		b.Start = time.Unix(0, stamp*int64(r.width)).UTC()
		sl := r.slot(stamp)
		if sl.stamp != stamp {
			continue
		}
		b.Matched = int(binCount(sl.counts[statusMatched]))
		b.Denied = int(binCount(sl.counts[statusDenied]))
		b.Timeout = int(binCount(sl.counts[statusTimeout]))
		for j := range sum {
			sum[j] += sl.counts[j]
		}
	}
	total := Bucket{
		Start:   out[0].Start,
		Matched: int(binCount(sum[statusMatched])),
		Denied:  int(binCount(sum[statusDenied])),
		Timeout: int(binCount(sum[statusTimeout])),
	}
	return out, total
}
