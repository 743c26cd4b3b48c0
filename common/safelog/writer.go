package safelog

import (
	"bytes"
	"io"
	"sync"
)

// MaxPending is the most bytes of an unfinished line a Writer holds back.
// When a line grows beyond it without a newline, the Writer scrubs and writes
// the line up to its last space or tab (or all of it, when there is none in
// the second half), so memory stays bounded. An address that straddles such
// a forced cut inside a single over-long token could escape scrubbing; log
// lines this long do not occur in practice.
const MaxPending = 64 << 10

// keepCap is the largest buffer capacity a Writer keeps between writes;
// bigger buffers, grown for one long line, are released.
const keepCap = 4 << 10

// Writer is the io.Writer returned by NewWriter. It is safe for concurrent
// use.
type Writer struct {
	mu      sync.Mutex
	w       io.Writer // guarded by mu
	pending []byte    // unfinished last line, guarded by mu
	out     []byte    // scratch for scrubbed text, guarded by mu
}

// NewWriter returns a writer that scrubs IP addresses from everything written
// to it before passing it on to w. It holds back the text after the last
// newline until the line is complete, so an address split across two Write
// calls is still caught; each Write passes every complete line it finishes
// to w in a single Write call. Lines longer than MaxPending are cut (see
// MaxPending). The returned value is a *Writer; call its Flush method to write
// out an unfinished last line.
func NewWriter(w io.Writer) io.Writer {
	return &Writer{w: w}
}

// Write scrubs and writes every line p completes and holds back the rest. It
// returns len(p) when everything it passed on was written. When the
// underlying writer fails, the held-back text is dropped and Write returns 0
// and the error.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()

	// The held-back text has no newline, so only p needs searching (a
	// long line written in small pieces costs linear, not quadratic, time).
	held := len(w.pending)
	data := p // no copy in the common case: nothing held back
	if held > 0 {
		w.pending = append(w.pending, p...)
		data = w.pending
	}
	rest := data
	if i := bytes.LastIndexByte(p, '\n'); i >= 0 {
		i += held
		rest = data[i+1:]
		if err := w.emit(data[:i+1]); err != nil {
			w.reset()
			return 0, err
		}
	}
	for len(rest) > MaxPending {
		cut := len(rest)
		if i := bytes.LastIndexAny(rest, " \t"); i >= len(rest)/2 {
			cut = i + 1
		}
		if err := w.emit(rest[:cut]); err != nil {
			w.reset()
			return 0, err
		}
		rest = rest[cut:]
	}
	// rest is a suffix of data, which may be w.pending itself: copy down.
	w.pending = append(w.pending[:0], rest...)
	if len(w.pending) == 0 && cap(w.pending) > keepCap {
		w.pending = nil
	}
	return len(p), nil
}

// Flush scrubs and writes the unfinished last line, if any.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.pending) == 0 {
		return nil
	}
	err := w.emit(w.pending)
	w.reset()
	return err
}

// emit writes b scrubbed to w.w in one call. Called with mu held.
func (w *Writer) emit(b []byte) error {
	if containsAddress(b) {
		w.out, _ = appendScrubbed(w.out[:0], b)
		b = w.out
	}
	n, err := w.w.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if cap(w.out) > keepCap {
		w.out = nil
	}
	return err
}

// reset drops the held-back text. Called with mu held.
func (w *Writer) reset() {
	w.pending = w.pending[:0]
	if cap(w.pending) > keepCap {
		w.pending = nil
	}
}
