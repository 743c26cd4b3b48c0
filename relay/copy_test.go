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
func TestCopyToStreamFailedWriteBuffer(t *testing.T) {
	socket := func(t *testing.T) net.Conn {
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
		if _, err := peer.Write(testPayload(1000)); err != nil {
			t.Fatal(err)
		}
		return src
	}
	pipe := func(t *testing.T) net.Conn {
		src, peer := net.Pipe()
		t.Cleanup(func() { peer.Close() })
		go peer.Write(testPayload(1000))
		return src
	}
	for name, open := range map[string]func(*testing.T) net.Conn{"socket": socket, "pipe": pipe} {
		t.Run(name, func(t *testing.T) {
			src := open(t)
			defer src.Close()
			var pool sync.Pool
			pool.New = func() any {
				b := make([]byte, copyBufferSize)
				return &b
			}
			var stats counters
			w := &keepingWriter{}
			if err := copyToStream(w, src, &pool, &stats, new(atomic.Uint64)); !errors.Is(err, errQueued) {
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
