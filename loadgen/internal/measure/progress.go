package measure

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// DefaultProgressInterval is how often a run reports progress when its
// Progress writer is set and its interval is zero.
const DefaultProgressInterval = 2 * time.Second

// Progress prints line() to w every interval until Stop is called. A nil w
// makes it a no-op. Writes to w come from one goroutine only.
type Progress struct {
	stopCh chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// StartProgress starts printing line() to w every interval (0:
// DefaultProgressInterval).
func StartProgress(w io.Writer, interval time.Duration, line func() string) *Progress {
	p := &Progress{stopCh: make(chan struct{})}
	if w == nil {
		return p
	}
	if interval <= 0 {
		interval = DefaultProgressInterval
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				fmt.Fprintln(w, line())
			case <-p.stopCh:
				return
			}
		}
	}()
	return p
}

// Stop ends the reporter and waits for it; safe to call more than once.
func (p *Progress) Stop() {
	p.once.Do(func() { close(p.stopCh) })
	p.wg.Wait()
}

// Say writes one line to w if w is not nil.
func Say(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format+"\n", args...)
	}
}

// lockedWriter serialises writes from the progress goroutine and the run.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// LockWriter returns w made safe for concurrent writes, or nil for nil.
func LockWriter(w io.Writer) io.Writer {
	if w == nil {
		return nil
	}
	if _, ok := w.(*lockedWriter); ok {
		return w
	}
	return &lockedWriter{w: w}
}
