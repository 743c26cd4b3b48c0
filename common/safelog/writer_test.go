package safelog

import (
	"bytes"
	"errors"
	"io"
	"log"
	"strings"
	"sync"
	"testing"
)

// recorder records each Write call separately.
type recorder struct {
	mu     sync.Mutex
	writes []string
	err    error
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	r.writes = append(r.writes, string(p))
	return len(p), nil
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.writes, "")
}

func writeAll(tb testing.TB, w io.Writer, chunks ...string) {
	tb.Helper()
	for _, c := range chunks {
		n, err := w.Write([]byte(c))
		if err != nil || n != len(c) {
			tb.Fatalf("Write(%q) = %d, %v", c, n, err)
		}
	}
}

func TestWriterSplitAddresses(t *testing.T) {
	line := "from 129.97.208.23:38310: and [2001:db8::1]:443 and 2001%3Adb8%3A%3A1 fp 33:B6:FA:F6:94:CA:74:61:45:4A\n"
	want := "from [scrubbed]: and [scrubbed] and [scrubbed] fp 33:B6:FA:F6:94:CA:74:61:45:4A\n"
	// Every split of the line into two and three writes.
	for i := 0; i <= len(line); i++ {
		for j := i; j <= len(line); j += 7 {
			var rec recorder
			w := NewWriter(&rec)
			writeAll(t, w, line[:i], line[i:j], line[j:])
			if got := rec.String(); got != want {
				t.Fatalf("split at %d,%d: got %q, want %q", i, j, got, want)
			}
		}
	}
}

func TestWriterLines(t *testing.T) {
	tests := []struct {
		name   string
		chunks []string
		writes []string // Write calls reaching the underlying writer
		flush  string   // what Flush then writes
	}{
		{"one line", []string{"a 1.2.3.4\n"}, []string{"a [scrubbed]\n"}, ""},
		{"two lines in one write", []string{"a 1.2.3.4\nb ::1\n"}, []string{"a [scrubbed]\nb [scrubbed]\n"}, ""},
		{"partial held back", []string{"a 1.2.3.4\nb 1.2"}, []string{"a [scrubbed]\n"}, "b 1.2"},
		{"partial completed", []string{"a 1.2", ".3.4\n"}, []string{"a [scrubbed]\n"}, ""},
		{"partial completed with more", []string{"a 1.2", ".3.4\nb ::", "1 x\n"}, []string{"a [scrubbed]\n", "b [scrubbed] x\n"}, ""},
		{"address at end of unfinished line", []string{"x 1.2.3.4"}, nil, "x [scrubbed]"},
		{"no address passes through", []string{"hello\n", "world\n"}, []string{"hello\n", "world\n"}, ""},
		{"empty writes", []string{"", "a", "", "\n", ""}, []string{"a\n"}, ""},
		{"fingerprint kept", []string{"33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A\n"}, []string{"33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A\n"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorder
			w := NewWriter(&rec)
			writeAll(t, w, tt.chunks...)
			if strings.Join(rec.writes, "|") != strings.Join(tt.writes, "|") {
				t.Errorf("writes %q, want %q", rec.writes, tt.writes)
			}
			n := len(rec.writes)
			if err := w.(*Writer).Flush(); err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(rec.writes[n:], ""); got != tt.flush {
				t.Errorf("Flush wrote %q, want %q", got, tt.flush)
			}
			m := len(rec.writes)
			if err := w.(*Writer).Flush(); err != nil || len(rec.writes) != m {
				t.Errorf("second Flush wrote again (%v)", err)
			}
		})
	}
}

func TestWriterBounded(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec).(*Writer)
	// A long line of words without a newline, written in small pieces.
	word := "word 1.2.3.4 "
	total := 0
	for total < 4*MaxPending {
		writeAll(t, w, word)
		total += len(word)
		if len(w.pending) > MaxPending {
			t.Fatalf("holding %d bytes, more than MaxPending", len(w.pending))
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("word [scrubbed] ", total/len(word))
	if got := rec.String(); got != want {
		t.Errorf("long line not scrubbed intact: got %d bytes, want %d", len(got), len(want))
	}
	if cap(w.pending) > keepCap || cap(w.out) > keepCap {
		t.Errorf("buffers kept after flush: pending %d, out %d", cap(w.pending), cap(w.out))
	}

	// One huge write without any space or newline is cut, not kept.
	rec = recorder{}
	w = NewWriter(&rec).(*Writer)
	huge := strings.Repeat("x", 3*MaxPending+5)
	writeAll(t, w, huge)
	if len(w.pending) > MaxPending {
		t.Fatalf("holding %d bytes after a huge write", len(w.pending))
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if rec.String() != huge {
		t.Error("huge write not passed on intact")
	}
}

func TestWriterError(t *testing.T) {
	boom := errors.New("boom")
	rec := &recorder{err: boom}
	w := NewWriter(rec)
	if n, err := w.Write([]byte("a 1.2.3.4\nrest")); !errors.Is(err, boom) || n != 0 {
		t.Fatalf("Write = %d, %v, want 0, boom", n, err)
	}
	rec.err = nil
	writeAll(t, w, "b\n")
	if got := rec.String(); got != "b\n" {
		t.Errorf("after an error got %q, want the held-back text dropped", got)
	}
	if n, err := NewWriter(shortWriter{}).Write([]byte("x\n")); !errors.Is(err, io.ErrShortWrite) || n != 0 {
		t.Errorf("short write: %d, %v", n, err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) - 1, nil }

func TestWriterWithLogPackage(t *testing.T) {
	var buf bytes.Buffer
	l := log.New(NewWriter(&buf), "", 0)
	l.Printf("client %s connected via [%s]:%d", "203.0.113.7", "2001:db8::7", 443)
	l.Print("fingerprint 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F")
	want := "client [scrubbed] connected via [scrubbed]\nfingerprint 33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F\n"
	if buf.String() != want {
		t.Errorf("got %q, want %q", buf.String(), want)
	}
}

func TestWriterConcurrent(t *testing.T) {
	var rec recorder
	w := NewWriter(&rec)
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for i := 0; i < 200; i++ {
				if _, err := w.Write([]byte("line from 192.0.2.1:443\n")); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if got, want := rec.String(), strings.Repeat("line from [scrubbed]\n", 800); got != want {
		t.Errorf("concurrent writes garbled: %d bytes, want %d", len(got), len(want))
	}
}

func TestWriterNoAllocCleanLine(t *testing.T) {
	w := NewWriter(io.Discard)
	line := []byte(benchLineClean + "\n")
	if allocs := testing.AllocsPerRun(100, func() { _, _ = w.Write(line) }); allocs != 0 {
		t.Errorf("writing a clean line allocates %v times", allocs)
	}
}

func BenchmarkWriter(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"clean", benchLineClean + "\n"},
		{"addresses", benchLineAddr + "\n"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w := NewWriter(io.Discard)
			line := []byte(bc.line)
			b.ReportAllocs()
			b.SetBytes(int64(len(line)))
			for b.Loop() {
				if _, err := w.Write(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
