package wsconn

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// Benchmarks. Run with
//
//	go test -run '^$' -bench . -benchmem ./internal/testkit/wsconn
//
// The figures and the buffer sizes chosen from them are recorded in
// docs/performance-log.md (2026-11-29).

// discardConn is a net.Conn whose writes vanish and whose reads block
// forever; it lets BenchmarkUpgradeBufferSize measure the server side of an
// upgrade alone.
type discardConn struct{ net.Conn }

func (discardConn) Write(p []byte) (int, error)      { return len(p), nil }
func (discardConn) Close() error                     { return nil }
func (discardConn) SetDeadline(time.Time) error      { return nil }
func (discardConn) SetReadDeadline(time.Time) error  { return nil }
func (discardConn) SetWriteDeadline(time.Time) error { return nil }
func (discardConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (discardConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (discardConn) Read(p []byte) (int, error)       { return 0, io.EOF }

// hijackWriter is the http.ResponseWriter an HTTP/1.1 server hands to a
// handler, reduced to what Upgrade uses. Like net/http, it gives each
// connection a 4 KiB bufio reader and writer.
type hijackWriter struct {
	h    http.Header
	conn net.Conn
}

func (w *hijackWriter) Header() http.Header         { return w.h }
func (w *hijackWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *hijackWriter) WriteHeader(int)             {}
func (w *hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(bufio.NewReaderSize(w.conn, 4096), bufio.NewWriterSize(w.conn, 4096)), nil
}

// BenchmarkUpgradeBufferSize measures the server side of a WebSocket upgrade
// for several read buffer sizes (0 = reuse the HTTP server's 4 KiB bufio
// reader). Write buffers come from a pool, as in the relay, so an upgrade
// never allocates one. B/op is the memory a new connection costs, most of it
// held for the connection's lifetime.
func BenchmarkUpgradeBufferSize(b *testing.B) {
	req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1/", nil)
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	for _, size := range []int{0, 128, 1024, 2048, 4096, 8192} {
		b.Run(fmt.Sprint(size), func(b *testing.B) {
			up := websocket.Upgrader{
				ReadBufferSize:  size,
				WriteBufferSize: size,
				WriteBufferPool: new(sync.Pool),
			}
			b.ReportAllocs()
			for b.Loop() {
				w := &hijackWriter{h: make(http.Header), conn: discardConn{}}
				ws, err := up.Upgrade(w, req, nil)
				if err != nil {
					b.Fatal(err)
				}
				_ = ws
			}
		})
	}
}

// Raw WebSocket frames for the benchmark peers, which speak the wire format
// directly so that the allocations measured are those of the side under test.

func frameHeaderLen(size int, masked bool) int {
	n := 2
	if size >= 126 {
		n += 2
	}
	if masked {
		n += 4
	}
	return n
}

// appendFrame appends one final binary frame holding payload, masked with a
// fixed key when masked is set (client to server).
func appendFrame(dst, payload []byte, masked bool) []byte {
	b1 := byte(0)
	if masked {
		b1 = 0x80
	}
	dst = append(dst, 0x82)
	if len(payload) < 126 {
		dst = append(dst, b1|byte(len(payload)))
	} else {
		dst = append(dst, b1|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(payload)))
	}
	if !masked {
		return append(dst, payload...)
	}
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	dst = append(dst, key[:]...)
	for i, c := range payload {
		dst = append(dst, c^key[i%4])
	}
	return dst
}

// drain reads and discards exactly n bytes from c, then reports the result.
func drain(c net.Conn, n int64, done chan<- error) {
	buf := make([]byte, 64<<10)
	var got int64
	for got < n {
		k, err := c.Read(buf[:min(int64(len(buf)), n-got)])
		got += int64(k)
		if err != nil {
			done <- err
			return
		}
	}
	done <- nil
}

// flood writes count copies of frame to c, batched.
func flood(c net.Conn, frame []byte, count int, done chan<- error) {
	per := max(1, (64<<10)/len(frame))
	batch := make([]byte, 0, per*len(frame))
	for range per {
		batch = append(batch, frame...)
	}
	for count > 0 {
		k := min(count, per)
		if _, err := c.Write(batch[:k*len(frame)]); err != nil {
			done <- err
			return
		}
		count -= k
	}
	done <- nil
}

// benchRead measures Conn.Read on the side given by onServer, fed by a raw peer.
func benchRead(b *testing.B, up *websocket.Upgrader, size int, onServer bool) {
	s, c := wsPair(b, up)
	under, peer := s, c.UnderlyingConn()
	if !onServer {
		under, peer = c, s.UnderlyingConn()
	}
	conn := New(under)
	payload := make([]byte, size)
	frame := appendFrame(nil, payload, onServer) // client frames are masked
	buf := make([]byte, 2048)
	done := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	go flood(peer, frame, b.N, done)
	want := int64(b.N) * int64(size)
	for got := int64(0); got < want; {
		n, err := conn.Read(buf)
		if err != nil {
			b.Fatal(err)
		}
		got += int64(n)
	}
	b.StopTimer()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// benchWrite measures Conn.Write on the side given by onServer, drained by a
// raw peer.
func benchWrite(b *testing.B, up *websocket.Upgrader, size int, onServer bool) {
	s, c := wsPair(b, up)
	under, peer := s, c.UnderlyingConn()
	if !onServer {
		under, peer = c, s.UnderlyingConn()
	}
	conn := New(under)
	payload := make([]byte, size)
	done := make(chan error, 1)
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	go drain(peer, int64(b.N)*int64(frameHeaderLen(size, !onServer)+size), done)
	for range b.N {
		if _, err := conn.Write(payload); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// relayUpgrader is configured like the relay's (see relay.newUpgrader).
func relayUpgrader() *websocket.Upgrader {
	return &websocket.Upgrader{
		ReadBufferSize:  RecommendedReadBufferSize,
		WriteBufferSize: RecommendedWriteBufferSize,
		WriteBufferPool: new(sync.Pool),
	}
}

// BenchmarkReadWrite measures Read and Write throughput and allocations per
// message for 150- and 3000-byte messages, on the server side (as in the
// relay) and on the client side (as in a proxy).
func BenchmarkReadWrite(b *testing.B) {
	for _, side := range []string{"server", "client"} {
		onServer := side == "server"
		for _, size := range []int{150, 3000} {
			b.Run(fmt.Sprintf("%s-read/%d", side, size), func(b *testing.B) {
				benchRead(b, relayUpgrader(), size, onServer)
			})
			b.Run(fmt.Sprintf("%s-write/%d", side, size), func(b *testing.B) {
				benchWrite(b, relayUpgrader(), size, onServer)
			})
		}
	}
}

// BenchmarkServerReadBufferSize measures server-side reads with several
// gorilla read buffer sizes, to size the buffer every idle connection holds.
func BenchmarkServerReadBufferSize(b *testing.B) {
	for _, rbs := range []int{0, 256, 512, 1024, 2048, 4096} {
		for _, size := range []int{150, 1403, 3000} {
			b.Run(fmt.Sprintf("buf=%d/msg=%d", rbs, size), func(b *testing.B) {
				up := &websocket.Upgrader{ReadBufferSize: rbs, WriteBufferPool: new(sync.Pool)}
				benchRead(b, up, size, true)
			})
		}
	}
}

// BenchmarkServerWriteBufferSize measures server-side writes with several
// pooled write buffer sizes.
func BenchmarkServerWriteBufferSize(b *testing.B) {
	for _, wbs := range []int{256, 512, 1024, 2048, 4096} {
		for _, size := range []int{150, 1403, 3000} {
			b.Run(fmt.Sprintf("buf=%d/msg=%d", wbs, size), func(b *testing.B) {
				up := &websocket.Upgrader{WriteBufferSize: wbs, WriteBufferPool: new(sync.Pool)}
				benchWrite(b, up, size, true)
			})
		}
	}
}
