package loadgen

import (
	"context"
	"sync"
	"sync/atomic"
)

// runPool calls job n times in all, from at most workers goroutines at
// once. Once ctx ends no new call starts; runPool returns when the calls
// under way have returned.
func runPool(ctx context.Context, workers, n int, job func()) {
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
