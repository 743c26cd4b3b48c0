package wsserver

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// The relay's WebSocket server side beside gorilla/websocket
// (docs/performance.md, "Hand-written servers against libraries"): memory
// per idle connection, and CPU per MB read and written. Each is upgraded
// the way the relay upgrades (a request read by http.ReadRequest, a
// hijacked connection) and used as the relay would:
//
//	wsserver  this package's Conn, over gobwas/ws
//	gorilla   gorilla/websocket, as the relay used it until issue 16
//	          (2 KiB read buffer of its own, pooled 4 KiB write buffer)
//
// Until issue 28 the package had its own frame reader and writer; they
// were measured here beside gobwas/ws, which read 5-9 times faster and
// kept 16 bytes more per idle connection, and gave way to it.

// wsImpl is one implementation under comparison.
type wsImpl struct {
	name    string
	upgrade func(w http.ResponseWriter, req *http.Request) (wsEnd, error)
}

// wsEnd is an upgraded server end: read one message of n bytes into p,
// write one message, go idle (give buffers back), close.
type wsEnd interface {
	readMessage(p []byte) error
	writeMessage(p []byte) error
	idle()
	Close() error
}

type connEnd struct{ *Conn }

func (c connEnd) readMessage(p []byte) error { _, err := io.ReadFull(c.Conn, p); return err }
func (c connEnd) writeMessage(p []byte) error {
	_, err := c.Write(p)
	return err
}
func (c connEnd) idle() { c.Release() }

type gorillaEnd struct{ *websocket.Conn }

func (c gorillaEnd) readMessage(p []byte) error {
	_, r, err := c.NextReader()
	if err != nil {
		return err
	}
	_, err = io.ReadFull(r, p)
	return err
}
func (c gorillaEnd) writeMessage(p []byte) error {
	return c.WriteMessage(websocket.BinaryMessage, p)
}
func (c gorillaEnd) idle() {}

func wsImpls() []wsImpl {
	pools := NewPools()
	gorilla := websocket.Upgrader{
		ReadBufferSize:  2048,
		WriteBufferSize: WriteBufferSize,
		WriteBufferPool: &sync.Pool{},
		CheckOrigin:     func(*http.Request) bool { return true },
	}
	return []wsImpl{
		{"wsserver", func(w http.ResponseWriter, req *http.Request) (wsEnd, error) {
			c, err := Upgrade(w, req, pools, time.Minute)
			return connEnd{c}, err
		}},
		{"gorilla", func(w http.ResponseWriter, req *http.Request) (wsEnd, error) {
			c, err := gorilla.Upgrade(w, req, nil)
			return gorillaEnd{c}, err
		}},
	}
}

// upgradeRequest is a client's opening handshake.
const upgradeRequest = "GET / HTTP/1.1\r\nHost: relay\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
	"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"

// hijackRW is a ResponseWriter that only hijacks, as the relay's Serve
// gives a request: its connection, with the reader the request was read
// through.
type hijackRW struct {
	conn net.Conn
	br   *bufio.Reader
	h    http.Header
}

func (w *hijackRW) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (w *hijackRW) Write(p []byte) (int, error) { return len(p), nil }
func (w *hijackRW) WriteHeader(int)             {}
func (w *hijackRW) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return w.conn, bufio.NewReadWriter(w.br, bufio.NewWriterSize(w.conn, 512)), nil
}

// upgradeOn reads the request from br and upgrades conn with impl.
func upgradeOn(impl wsImpl, conn net.Conn, br *bufio.Reader) (wsEnd, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, err
	}
	return impl.upgrade(&hijackRW{conn: conn, br: br}, req)
}

// ringConn is a net.Conn whose reads go round a fixed byte stream (whole
// client frames) and whose writes are dropped: the CPU a WebSocket layer
// spends, without system calls.
type ringConn struct {
	net.Conn // nil: only what is defined here is called
	data     []byte
	off      int
	reads    int
}

func (c *ringConn) Read(p []byte) (int, error) {
	c.reads++
	n := copy(p, c.data[c.off:])
	c.off = (c.off + n) % len(c.data)
	return n, nil
}
func (*ringConn) Write(p []byte) (int, error)      { return len(p), nil }
func (*ringConn) SetDeadline(time.Time) error      { return nil }
func (*ringConn) SetReadDeadline(time.Time) error  { return nil }
func (*ringConn) SetWriteDeadline(time.Time) error { return nil }
func (*ringConn) Close() error                     { return nil }
func (*ringConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (*ringConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }

// benchSizes are message sizes: a KCP acknowledgement, a full KCP packet,
// the relay's largest message.
var benchSizes = []int{150, 1403, MaxSingleWrite}

func upgradeRing(b *testing.B, impl wsImpl, data []byte) (wsEnd, *ringConn) {
	rc := &ringConn{data: data}
	end, err := upgradeOn(impl, rc, bufio.NewReader(strings.NewReader(upgradeRequest)))
	if err != nil {
		b.Fatal(err)
	}
	rc.reads = 0
	return end, rc
}

// BenchmarkRead reads messages of each size: CPU per MB read is ns/op
// over the size (or 1/MB/s).
func BenchmarkRead(b *testing.B) {
	for _, impl := range wsImpls() {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", impl.name, size), func(b *testing.B) {
				var data []byte
				for len(data) < 256<<10 {
					data = append(data, frame(true, opBinary, bytes.Repeat([]byte{'x'}, size))...)
				}
				end, rc := upgradeRing(b, impl, data)
				p := make([]byte, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := end.readMessage(p); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(rc.reads)/float64(b.N), "reads/op")
			})
		}
	}
}

// BenchmarkWrite writes messages of each size.
func BenchmarkWrite(b *testing.B) {
	for _, impl := range wsImpls() {
		for _, size := range benchSizes {
			b.Run(fmt.Sprintf("%s/%d", impl.name, size), func(b *testing.B) {
				end, _ := upgradeRing(b, impl, []byte{0})
				p := bytes.Repeat([]byte{'x'}, size)
				b.SetBytes(int64(size))
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					if err := end.writeMessage(p); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// idleConns is how many connections BenchmarkIdle opens per
// implementation.
func idleConns() int {
	if os.Getenv("FLURRY_BENCH_SMOKE") != "" {
		return 50
	}
	return 5000
}

// heapAndStacks is the Go heap in use plus goroutine stacks, after two
// collections.
func heapAndStacks() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc + ms.StackInuse)
}

// BenchmarkIdle opens idleConns loopback connections per implementation,
// each upgraded and carrying one 100-byte message (a carrier's first
// packet), then idle with no goroutine: the relay parks idle carriers
// (docs/performance.md). It reports the heap and stacks per connection,
// both ends of the TCP connection included; "tcp" is the same without
// WebSocket (accepted, the request read, held), so that the difference
// is what a WebSocket layer keeps per idle connection.
func BenchmarkIdle(b *testing.B) {
	tcp := wsImpl{name: "tcp"}
	for _, impl := range append([]wsImpl{tcp}, wsImpls()...) {
		b.Run(impl.name, func(b *testing.B) {
			for range b.N {
				b.ReportMetric(idleBytesPerConn(b, impl, idleConns()), "B/conn")
			}
		})
	}
}

func idleBytesPerConn(b *testing.B, impl wsImpl, n int) float64 {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	msg := frame(true, opBinary, bytes.Repeat([]byte{'m'}, 100))
	var (
		servers []io.Closer
		clients []net.Conn
		mu      sync.Mutex
		failed  atomic.Value
	)
	defer func() {
		for _, c := range clients {
			c.Close()
		}
		for _, s := range servers {
			s.Close()
		}
	}()
	before := heapAndStacks()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for range n {
			c, err := ln.Accept()
			if err != nil {
				failed.Store(err)
				return
			}
			br := bufio.NewReader(c)
			var end io.Closer = c
			if impl.upgrade != nil {
				ws, err := upgradeOn(impl, c, br)
				if err == nil {
					err = ws.readMessage(make([]byte, 100))
				}
				if err != nil {
					failed.Store(err)
					return
				}
				ws.idle()
				end = ws
			} else if _, err := http.ReadRequest(br); err != nil {
				failed.Store(err)
				return
			}
			mu.Lock()
			servers = append(servers, end)
			mu.Unlock()
		}
	}()
	resp := make([]byte, 512)
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		clients = append(clients, c)
		if _, err := io.WriteString(c, upgradeRequest); err != nil {
			b.Fatal(err)
		}
		if impl.upgrade == nil {
			continue
		}
		// The 101 response, then the first message.
		var got []byte
		for !bytes.Contains(got, []byte("\r\n\r\n")) {
			k, err := c.Read(resp)
			if err != nil {
				b.Fatalf("%s: reading the handshake's response: %v", impl.name, err)
			}
			got = append(got, resp[:k]...)
		}
		if _, err := c.Write(msg); err != nil {
			b.Fatal(err)
		}
	}
	<-accepted
	if err, _ := failed.Load().(error); err != nil {
		b.Fatalf("%s: %v", impl.name, err)
	}
	after := heapAndStacks()
	runtime.KeepAlive(servers)
	runtime.KeepAlive(clients)
	return float64(after-before) / float64(n)
}
