package measure

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"
)

// Limits of every run's configuration.
const (
	MaxPeers = 100_000 // per kind (proxies, clients, idle polls, carriers)
	MaxSteps = 32
)

// Median returns the median of v (the upper one of an even count), 0 if
// v is empty.
func Median(v []int64) int64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// MiB formats b bytes in MiB.
func MiB(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// MedianFloat returns the median of xs, 0 if xs is empty.
func MedianFloat(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// maxSamples bounds the latencies kept per recorder; beyond it a uniform
// reservoir sample is kept, so memory stays bounded on long runs.
const maxSamples = 1 << 20

// Percentiles summarises a set of durations, in milliseconds.
type Percentiles struct {
	Count  int64   `json:"count"`
	MeanMs float64 `json:"mean_ms"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// Recorder collects durations; safe for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	samples []time.Duration // guarded by mu
	count   int64           // guarded by mu
	sum     time.Duration   // guarded by mu
	max     time.Duration   // guarded by mu
	rng     *rand.Rand      // guarded by mu
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{rng: rand.New(rand.NewPCG(1, 2))}
}

// Add records one latency.
func (r *Recorder) Add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	r.sum += d
	r.max = max(r.max, d)
	if len(r.samples) < maxSamples {
		r.samples = append(r.samples, d)
		return
	}
	if i := r.rng.Int64N(r.count); i < maxSamples {
		r.samples[i] = d
	}
}

// Percentiles summarises the latencies recorded so far.
func (r *Recorder) Percentiles() Percentiles {
	r.mu.Lock()
	defer r.mu.Unlock()
	return summarize(r.samples, r.count, r.sum, r.max)
}

func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// summarize computes percentiles (nearest rank) of samples, which it sorts.
func summarize(samples []time.Duration, count int64, sum, maxD time.Duration) Percentiles {
	if len(samples) == 0 || count == 0 {
		return Percentiles{}
	}
	slices.Sort(samples)
	rank := func(p float64) time.Duration {
		i := int(math.Ceil(p*float64(len(samples)))) - 1
		return samples[min(max(i, 0), len(samples)-1)]
	}
	return Percentiles{
		Count:  count,
		MeanMs: ms(sum / time.Duration(count)),
		P50Ms:  ms(rank(0.50)),
		P90Ms:  ms(rank(0.90)),
		P99Ms:  ms(rank(0.99)),
		MaxMs:  ms(maxD),
	}
}

// ErrorSamples keeps the first few distinct error texts of a run.
type ErrorSamples struct {
	mu   sync.Mutex
	seen map[string]int // guarded by mu
	list []string       // guarded by mu
}

const maxErrorSamples = 8

// Add keeps text (cut to 200 bytes) unless it is kept already or the
// samples are full.
func (e *ErrorSamples) Add(text string) {
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.seen == nil {
		e.seen = make(map[string]int)
	}
	if _, ok := e.seen[text]; ok || len(e.list) >= maxErrorSamples {
		return
	}
	e.seen[text] = len(e.list)
	e.list = append(e.list, text)
}

// Get returns the samples kept.
func (e *ErrorSamples) Get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.list)
}

// Rate is n per second of d, to two decimals.
func Rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return math.Round(float64(n)/d.Seconds()*100) / 100
}

// Seconds is d in seconds, to the millisecond.
func Seconds(d time.Duration) float64 { return math.Round(d.Seconds()*1000) / 1000 }

// SampleGap is the time between the five memory samples taken after a
// settle period: 200 ms, or less for short settle periods (tests).
func SampleGap(settle time.Duration) time.Duration {
	return min(200*time.Millisecond, settle/5)
}

// Round3 rounds x to three decimals.
func Round3(x float64) float64 { return math.Round(x*1000) / 1000 }
