package relay

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"testing"
)

// keepingWriter fails every Write and keeps the slice it was given, as
// smux does when a Write times out while the frame is still queued.
type keepingWriter struct{ kept []byte }

var errQueued = errors.New("write deadline passed, frame still queued")

func (w *keepingWriter) Write(p []byte) (int, error) {
	w.kept = p
	return 0, errQueued
}

// TestCopyToStreamFailedWriteBuffer checks that a buffer handed to a Write
// that failed never goes back to the pool: the writer may still read it
// (the data race `go test -race` found between copyToStream and smux's send
// loop). Both paths are tried: a socket and a connection that is not one.
// copySources opens the two kinds of target copyToStream reads from, each
// with payload already sent by its peer: a socket and a connection that is
// not one.
var copySources = map[string]func(t *testing.T, payload []byte) net.Conn{
	"socket": func(t *testing.T, payload []byte) net.Conn {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		peer, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { peer.Close() })
		src, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			peer.Write(payload)
			peer.(*net.TCPConn).CloseWrite()
		}()
		return src
	},
	"pipe": func(t *testing.T, payload []byte) net.Conn {
		src, peer := net.Pipe()
		t.Cleanup(func() { peer.Close() })
		go func() {
			peer.Write(payload)
			peer.Close()
		}()
		return src
	},
}

func newCopyPool() *sync.Pool {
	return &sync.Pool{New: func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}}
}

func TestCopyToStreamFailedWriteBuffer(t *testing.T) {
	for name, open := range copySources {
		t.Run(name, func(t *testing.T) {
			src := open(t, testPayload(1000))
			defer src.Close()
			pool := newCopyPool()
			var stats counters
			w := &keepingWriter{}
			if err := copyToStream(w, src, pool, &stats, new(atomic.Uint64)); !errors.Is(err, errQueued) {
				t.Fatalf("copyToStream = %v, want the writer's error", err)
			}
			if len(w.kept) == 0 {
				t.Fatal("the writer was never called")
			}
			// Without the fix, the next Get on this goroutine returns
			// the kept buffer nearly always (the race detector's pool
			// drops a quarter of what is put back).
			for range 8 {
				bp := pool.Get().(*[]byte)
				if &(*bp)[0] == &w.kept[0] {
					t.Fatal("the buffer of a failed Write went back to the pool while the writer still holds it")
				}
			}
		})
	}
}

// sizesWriter records the size of every Write.
type sizesWriter struct{ sizes []int }

func (w *sizesWriter) Write(p []byte) (int, error) {
	w.sizes = append(w.sizes, len(p))
	return len(p), nil
}

// TestCopyToStreamFirstReadSmall checks that a stream's first read from its
// target, and so its first smux frame, is at most firstReadSize even when
// the target has sent much more, and that later reads take the whole
// buffer.
func TestCopyToStreamFirstReadSmall(t *testing.T) {
	const total = 3 * copyBufferSize
	for name, open := range copySources {
		t.Run(name, func(t *testing.T) {
			src := open(t, testPayload(total))
			defer src.Close()
			var stats counters
			w := &sizesWriter{}
			if err := copyToStream(w, src, newCopyPool(), &stats, new(atomic.Uint64)); err != nil {
				t.Fatalf("copyToStream = %v, want nil at EOF", err)
			}
			sum, largest := 0, 0
			for _, n := range w.sizes {
				sum += n
				largest = max(largest, n)
			}
			if sum != total {
				t.Fatalf("copied %d bytes, want %d", sum, total)
			}
			if w.sizes[0] > firstReadSize {
				t.Errorf("first write of %d bytes, want at most %d", w.sizes[0], firstReadSize)
			}
			if largest <= firstReadSize {
				t.Errorf("largest write %d bytes: later reads are capped too (writes %v)", largest, w.sizes)
			}
		})
	}
}
