package wsconn

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// allocRuns is the number of messages each allocation count averages over.
// testing.AllocsPerRun divides with an integer division, so a stray
// allocation (a sync.Pool emptied by a GC during the run) does not change
// the count; one more allocation per message does.
const allocRuns = 500

// TestAllocsPerMessage locks the steady-state heap allocations of Read and
// Write per WebSocket message at gorilla v1.5.3's floor, over a real
// loopback TCP connection whose far end speaks raw frames (so that only the
// side under test allocates). Measured with go1.26:
//
//   - Read, either side: 1 per message. gorilla's NextReader allocates a
//     messageReader (8 bytes) for every data message, and there is no other
//     way to read a message from a *websocket.Conn (ReadMessage calls
//     NextReader and allocates the whole message on top). Conn.Read itself
//     adds nothing: it reads straight into the caller's buffer.
//   - Write, server side with a WriteBufferPool (the relay's Upgrader): 1
//     per message. WriteMessage takes gorilla's single-frame fast path, which
//     allocates nothing until it gives the pooled write buffer back:
//     Put(writePoolData{buf}) boxes the slice into an interface (24 bytes).
//     Without a pool the count would be 0, but every connection would then
//     pin a 4 KiB write buffer for its whole life, which the relay does not
//     want. Up to RecommendedWriteBufferSize-14 bytes (the relay's largest
//     batch) a message stays on this path; larger ones cost 2 more
//     allocations (gorilla writes them with net.Buffers).
//   - Write, client side with a WriteBufferPool (as flurry-proxy dials the
//     relay): 2 per message. gorilla's client has no fast path: NextWriter's
//     messageWriter escapes (48 bytes), plus the pool box above.
//
// The floor is asserted exactly: more is a regression in this package (or
// in how it calls gorilla); fewer means gorilla or the compiler got better,
// and the floor here and in docs/performance.md should come down with it.
//
// The test runs under the race detector too. There sync.Pool drops a
// quarter of the items put back at random, so a write refills gorilla's
// write buffer pool about once in four messages (measured 1.25 and 2.25
// allocations per message instead of 1 and 2); testing.AllocsPerRun's
// integer division reads that as the floor, while one allocation per
// message more still fails.
func TestAllocsPerMessage(t *testing.T) {
	serverUp := relayUpgrader()
	proxyDialer := &websocket.Dialer{
		HandshakeTimeout: 10 * time.Second,
		ReadBufferSize:   RecommendedReadBufferSize,
		WriteBufferSize:  RecommendedWriteBufferSize,
		WriteBufferPool:  new(sync.Pool),
	}
	tests := []struct {
		side               string
		size               int
		readFloor, wrFloor float64
	}{
		{"server", 150, 1, 1},
		{"server", 1403, 1, 1}, // one encapsulated KCP packet
		{"server", RecommendedWriteBufferSize - 14, 1, 1},
		{"client", 150, 1, 2},
		{"client", 1403, 1, 2},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%d", tt.side, tt.size), func(t *testing.T) {
			s, c := wsPairDialer(t, serverUp, proxyDialer)
			onServer := tt.side == "server"
			under, peer := s, c.UnderlyingConn()
			if !onServer {
				under, peer = c, s.UnderlyingConn()
			}
			conn := New(under)
			// Fail rather than hang if a message goes missing.
			deadline := time.Now().Add(time.Minute)
			if err := conn.SetDeadline(deadline); err != nil {
				t.Fatal(err)
			}
			if err := peer.SetDeadline(deadline); err != nil {
				t.Fatal(err)
			}
			payload := make([]byte, tt.size)
			for i := range payload {
				payload[i] = byte(i)
			}
			// Frames to the server are masked, frames from it are not.
			inFrame := appendFrame(nil, payload, onServer)
			outFrame := make([]byte, frameHeaderLen(tt.size, !onServer)+tt.size)
			buf := make([]byte, tt.size)

			read := func() {
				if _, err := peer.Write(inFrame); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(conn, buf); err != nil {
					t.Fatal(err)
				}
			}
			write := func() {
				if _, err := conn.Write(payload); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(peer, outFrame); err != nil {
					t.Fatal(err)
				}
			}
			checkAllocs(t, "Read", tt.readFloor, read)
			checkAllocs(t, "Write", tt.wrFloor, write)
		})
	}
}

// checkAllocs runs f allocRuns times and fails unless it allocates exactly
// floor times per run.
func checkAllocs(tb testing.TB, name string, floor float64, f func()) {
	tb.Helper()
	for range 10 { // fill the pools before counting
		f()
	}
	got := testing.AllocsPerRun(allocRuns, f)
	switch {
	case got > floor:
		tb.Errorf("%s: %v allocations per message, want %v (gorilla's floor): the data path allocates more than it used to", name, got, floor)
	case got < floor:
		tb.Errorf("%s: %v allocations per message, below the recorded floor %v: lower the floor here and in docs/performance.md", name, got, floor)
	}
}
