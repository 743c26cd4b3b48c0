package relay

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/relay/internal/wsserver"
)

// allocRuns is the number of packets each allocation count averages over.
// testing.AllocsPerRun divides with an integer division, so a stray
// allocation (a sync.Pool emptied by a GC during the run) does not change
// the count; one more allocation per packet does.
const allocRuns = 500

// allocHarness is one carrier, served by carrier.serve exactly as the relay
// serves it (the relay's upgrade, buffer pools, handshake, read loop and
// write loop), whose shard is a bare QueuePacketConn with no KCP on top: the
// test plays KCP's part (ReadFrom, WriteTo) so that the allocations counted
// are the carrier's, not kcp-go's. The proxy end is the raw TCP connection
// under a WebSocket, speaking frames directly, so it allocates nothing.
type allocHarness struct {
	r     *Relay
	id    net.Addr // the address the carrier tags its packets with
	pconn *turbotunnel.QueuePacketConn
	peer  net.Conn
}

func newAllocHarness(tb testing.TB) *allocHarness {
	tb.Helper()
	r, err := New(Config{ForwardAddr: "127.0.0.1:1", NumTurbotunnel: 1}) // never dialled
	if err != nil {
		tb.Fatal(err)
	}
	// Only this test's goroutine touches r.shards until the carrier starts
	// and after it has ended.
	kcpShards := r.shards
	pconn := turbotunnel.NewQueuePacketConn(shardAddr(0), r.cfg.ClientTimeout, turbotunnel.MTU)
	r.shards = []*shard{{pconn: pconn}}
	tb.Cleanup(func() {
		r.shards = kcpShards
		r.Close()
		pconn.Close()
	})

	wsc := make(chan *wsserver.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		ws, err := wsserver.Upgrade(w, req, r.ws, time.Minute)
		if err != nil {
			close(wsc)
			return
		}
		wsc <- ws
	}))
	tb.Cleanup(srv.Close)
	client, err := dialWS("ws" + strings.TrimPrefix(srv.URL, "http"))
	if err != nil {
		tb.Fatal(err)
	}
	id := turbotunnel.NewClientID()
	h := &allocHarness{r: r, pconn: pconn, peer: client.UnderlyingConn()}
	tb.Cleanup(func() { h.peer.Close() })
	ws := <-wsc
	if ws == nil {
		tb.Fatal("upgrade failed")
	}
	c := newCarrier(r, ws, netip.Addr{})
	done := make(chan struct{})
	c.ended = func() { close(done) }
	go c.serve()
	// Cleanups run last-in first-out: the carrier ends (its peer gone)
	// before the relay gets its shards back.
	tb.Cleanup(func() {
		h.peer.Close()
		<-done
	})
	// Fail rather than hang if a packet goes missing (the carrier sets
	// deadlines of its own on its end).
	deadline := time.Now().Add(time.Minute)
	if err := h.peer.SetDeadline(deadline); err != nil {
		tb.Fatal(err)
	}
	if err := pconn.SetReadDeadline(deadline); err != nil {
		tb.Fatal(err)
	}
	// Handshake, and a first packet that the relay's admission takes as
	// opening a session: KCP learns the client's address from it, and so
	// does the harness.
	hello := append(append([]byte(nil), turbotunnel.Token[:]...), id[:]...)
	hello = append(hello, chunked(tb, nopPacket(1))...)
	if _, err := h.peer.Write(appendMaskedFrame(nil, hello)); err != nil {
		tb.Fatal(err)
	}
	_, addr, err := pconn.ReadFrom(make([]byte, turbotunnel.MTU))
	if err != nil {
		tb.Fatal(err)
	}
	if got, ok := turbotunnel.ClientIDFromAddr(addr); !ok || got != id {
		tb.Fatalf("first packet from %v (%T), want ClientID %v", addr, addr, id)
	}
	h.id = addr
	return h
}

// clientState returns the state of the harness's ClientID.
func (h *allocHarness) clientState(tb testing.TB) *clientState {
	tb.Helper()
	id, _ := turbotunnel.ClientIDFromAddr(h.id)
	h.r.mu.Lock()
	defer h.r.mu.Unlock()
	st := h.r.clients[id]
	if st == nil {
		tb.Fatal("the harness's ClientID has no state")
	}
	return st
}

// appendMaskedFrame appends one final binary frame holding payload, masked
// as a client's frame must be.
func appendMaskedFrame(dst, payload []byte) []byte {
	dst = append(dst, 0x82) // FIN, binary
	switch {
	case len(payload) < 126:
		dst = append(dst, 0x80|byte(len(payload)))
	case len(payload) < 1<<16:
		dst = append(dst, 0x80|126)
		dst = binary.BigEndian.AppendUint16(dst, uint16(len(payload)))
	default:
		dst = append(dst, 0x80|127)
		dst = binary.BigEndian.AppendUint64(dst, uint64(len(payload)))
	}
	key := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	dst = append(dst, key[:]...)
	for i, b := range payload {
		dst = append(dst, b^key[i%4])
	}
	return dst
}

// serverFrameLen is the length of the unmasked frame a server sends for a
// payload of n bytes.
func serverFrameLen(n int) int {
	switch {
	case n < 126:
		return 2 + n
	case n < 1<<16:
		return 4 + n
	default:
		return 10 + n
	}
}

// chunked returns the encapsulation data chunks of packets, back to back.
func chunked(tb testing.TB, packets ...[]byte) []byte {
	tb.Helper()
	var b []byte
	for _, p := range packets {
		w := &sliceWriter{b}
		if _, err := encapsulation.WriteData(w, p); err != nil {
			tb.Fatal(err)
		}
		b = w.b
	}
	return b
}

type sliceWriter struct{ b []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.b = append(w.b, p...)
	return len(p), nil
}

// TestCarrierAllocsPerPacket locks the heap allocations of the carrier's
// per-packet steady state, both ways, at 0 (measured with go1.26):
//
//   - In (WebSocket frame → wsserver.Conn.Read from a pooled read buffer →
//     encapsulation.ReadData into a pooled packet buffer →
//     QueuePacketConn.QueueIncoming → ReadFrom and the session look-up by
//     addr.String(), which is what kcp-go's Listener does with each
//     packet): everything is pooled or lives in the carrier (the look-ahead
//     byte, the prefixedReader, the ClientID's Addr made once, whose String
//     returns a string it already has), also for a message with two
//     packets. gorilla's reader cost 1 (its messageReader).
//   - Out (QueuePacketConn.WriteTo, which is KCP's write → OutgoingQueue →
//     encapsulation.WriteData into a pooled bytes.Buffer → Restore →
//     wsserver.Conn.Write through a pooled frame buffer, kept as a pointer
//     so that putting it back boxes nothing). gorilla cost 1. (The write
//     loop batches packets that are already waiting into one message; a
//     test cannot make that happen deterministically, so only
//     single-packet messages are counted.)
//
// More is a regression in the relay's data path.
func TestCarrierAllocsPerPacket(t *testing.T) {
	if raceEnabled {
		// The race detector's sync.Pool drops a quarter of the items
		// put back at random (to flush out reuse bugs), and every pool on
		// the path (packets, turbotunnel buffers and their boxes,
		// messages, WebSocket read and write buffers) then makes new ones:
		// the count varies from run to run. It is noise, not the floor.
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	for _, size := range []int{24, turbotunnel.MTU} { // an ACK-only KCP packet, a full one
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			h := newAllocHarness(t)
			pkt := testPayload(size)
			buf := make([]byte, turbotunnel.MTU)

			// readPacket reads a packet as kcp-go's Listener does: ReadFrom,
			// then a look-up of the packet's session by addr.String().
			sessions := map[string]int{h.id.String(): 1}
			readPacket := func() {
				n, addr, err := h.pconn.ReadFrom(buf)
				if err != nil {
					t.Fatal(err)
				}
				if n != size || sessions[addr.String()] != 1 {
					t.Fatalf("ReadFrom: %d bytes from %v, want %d from %v", n, addr, size, h.id)
				}
			}
			chunk := chunked(t, pkt)
			in1 := appendMaskedFrame(nil, chunk)
			in2 := appendMaskedFrame(nil, chunked(t, pkt, pkt))
			out := make([]byte, serverFrameLen(len(chunk)))

			checkAllocs(t, "in, one packet per message", 0, func() {
				if _, err := h.peer.Write(in1); err != nil {
					t.Fatal(err)
				}
				readPacket()
			})
			checkAllocs(t, "in, two packets per message", 0, func() {
				if _, err := h.peer.Write(in2); err != nil {
					t.Fatal(err)
				}
				readPacket()
				readPacket()
			})
			checkAllocs(t, "out, one packet per message", 0, func() {
				if _, err := h.pconn.WriteTo(pkt, h.id); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(h.peer, out); err != nil {
					t.Fatal(err)
				}
			})
			// The last message out really is the packet's chunk.
			if out[0] != 0x82 || !bytes.Equal(out[len(out)-len(chunk):], chunk) {
				t.Fatalf("message out: % x, want a binary frame holding % x", out, chunk)
			}
		})
	}
}

// checkAllocs runs f allocRuns times and fails unless it allocates exactly
// floor times per run.
func checkAllocs(tb testing.TB, name string, floor float64, f func()) {
	tb.Helper()
	for range 10 { // fill the pools and start the writer before counting
		f()
	}
	got := testing.AllocsPerRun(allocRuns, f)
	switch {
	case got > floor:
		tb.Errorf("%s: %v allocations per run, want %v (the floor): the data path allocates more than it used to", name, got, floor)
	case got < floor:
		tb.Errorf("%s: %v allocations per run, below the recorded floor %v: lower the floor here and in docs/performance.md", name, got, floor)
	}
}

// TestCopyToStreamAllocs locks copyToStream, a stream's target → client
// direction, at 0 allocations per read from the target (measured with
// go1.26), over a real loopback TCP connection: it waits for readability
// with the socket's RawConn, reads into a pooled buffer and hands it to the
// stream. The read function given to RawConn.Read escapes, so it is made
// once per stream; made inside the loop it cost 4 allocations per read (the
// closure and the three variables it sets). What the smux stream and KCP
// then allocate is theirs, so the test writes to a plain io.Writer instead.
func TestCopyToStreamAllocs(t *testing.T) {
	if raceEnabled {
		// As in TestCarrierAllocsPerPacket: the race detector's
		// sync.Pool drops buffers at random, and each refill of the copy
		// pool costs 2 allocations (measured about 1.0 per read instead
		// of 0, right on the integer boundary).
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	target, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	src, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	// Fail rather than hang if bytes go missing.
	if err := src.SetReadDeadline(time.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}

	pools := newBufferPools()
	var stats counters
	copied := make(chan int)
	done := make(chan error, 1)
	go func() { done <- copyToStream(chanWriter(copied), src, &pools.copies, &stats, new(atomic.Uint64)) }()

	chunk := testPayload(1000)
	runs := 0
	checkAllocs(t, "target read → stream write", 0, func() {
		runs++
		if _, err := target.Write(chunk); err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(chunk); {
			select {
			case k := <-copied:
				n += k
			case err := <-done:
				t.Fatalf("copyToStream ended: %v", err)
			}
		}
	})
	target.Close()
	if err := <-done; err != nil {
		t.Errorf("copyToStream at the target's EOF: %v, want nil", err)
	}
	if got, want := stats.streamDown.Load(), uint64(len(chunk)*runs); got != want {
		t.Errorf("streamDown = %d, want %d", got, want)
	}
}

// chanWriter reports the length of each write on its channel.
type chanWriter chan int

func (w chanWriter) Write(p []byte) (int, error) {
	w <- len(p)
	return len(p), nil
}
