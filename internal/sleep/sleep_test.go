package sleep

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

func TestFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if !For(context.Background(), time.Minute) || time.Since(start) != time.Minute {
			t.Errorf("For(minute) returned false or after %v", time.Since(start))
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start = time.Now()
		if For(ctx, time.Hour) || time.Since(start) != time.Second {
			t.Errorf("For(hour) with a 1s context returned true or after %v", time.Since(start))
		}
	})
}
