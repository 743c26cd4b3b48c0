package manyusers

import (
	"context"
	"errors"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
)

func TestUserMixKinds(t *testing.T) {
	m, err := UserMix{BulkShare: 0.2}.WithDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var bulk []int
	for i := range 12 {
		if m.kind(i) == UserBulk {
			bulk = append(bulk, i)
		}
	}
	if want := []int{0, 5, 10}; !slices.Equal(bulk, want) {
		t.Errorf("bulk users %v, want %v", bulk, want)
	}
	none, _ := UserMix{BulkShare: -1}.WithDefaults()
	all, _ := UserMix{BulkShare: 1}.WithDefaults()
	for i := range 5 {
		if none.kind(i) != UserInteractive || all.kind(i) != UserBulk {
			t.Fatalf("user %d: share 0 gives %s, share 1 gives %s", i, none.kind(i), all.kind(i))
		}
	}
	for _, bad := range []UserMix{{BulkShare: 1.5}, {ResponseBytes: tcptarget.MaxMixedResponse + 1}, {RequestBytes: -1}, {Think: -time.Second}} {
		if _, err := bad.WithDefaults(); !errors.Is(err, measure.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// TestUserGroupStopsQuietly checks that users end without counting a
// failure when the run stops them.
func TestUserGroupStopsQuietly(t *testing.T) {
	tg, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Mixed})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	var errs measure.ErrorSamples
	mix, _ := UserMix{BulkShare: 0.5, Think: 10 * time.Millisecond, ResponseBytes: 1000}.WithDefaults()
	g := NewGroup(mix, 2, &errs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	for i := range 2 {
		c, err := net.Dial("tcp", tg.Addr())
		if err != nil {
			t.Fatal(err)
		}
		go func() { g.Run(ctx, i, c); done <- struct{}{} }()
	}
	if n := g.WaitStarted(ctx, 10*time.Second); n != 2 {
		t.Fatalf("%d users started", n)
	}
	a := g.Snapshot()
	time.Sleep(100 * time.Millisecond)
	w := g.Window(a, g.Snapshot(), 100*time.Millisecond)
	if len(w.Classes) != 2 || w.down <= 0 {
		t.Errorf("window %+v", w)
	}
	cancel()
	<-done
	<-done
	if g.Failed.Load() != 0 {
		t.Errorf("%d users failed: %v", g.Failed.Load(), errs.Get())
	}
}
