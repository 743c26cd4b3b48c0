package measure

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Pace puts rate tokens per second into tokens until ctx ends; a token that
// finds the channel full is counted in missed.
func Pace(ctx context.Context, perSec float64, tokens chan<- struct{}, missed *atomic.Int64) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	start := time.Now()
	var sent int64
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			due := int64(now.Sub(start).Seconds() * perSec)
			for ; sent < due; sent++ {
				select {
				case tokens <- struct{}{}:
				default:
					missed.Add(1)
				}
			}
		}
	}
}

// RunPool calls job n times in all, from at most workers goroutines at
// once. Once ctx ends no new call starts; runPool returns when the calls
// under way have returned.
func RunPool(ctx context.Context, workers, n int, job func()) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for ctx.Err() == nil && next.Add(1) <= int64(n) {
				job()
			}
		})
	}
	wg.Wait()
}
