package turbotunnel

import (
	"bytes"
	"net"
	"testing"
	"time"
)

// TestQueuePacketConnAllocs locks the per-packet steady state of a
// QueuePacketConn at zero heap allocations, both ways and when a queue is
// full (a flood must not cost the relay memory): QueueIncoming, ReadFrom,
// WriteTo, OutgoingQueue and Restore are the calls the relay's carriers and
// KCP make for every packet, and String is what kcp-go's Listener calls on
// the address of every packet it reads. Measured with go1.26: 0 for every
// step, with the address in either form (ClientID.Addr, which the relay
// uses, or a bare ClientID, whose String alone costs 1). It is the floor,
// and reachable, because packet buffers come from bufferPool (which boxes
// nothing: buffers travel in reused *[]byte boxes), the queues are channels
// of slices and of taggedPacket values, usableAddr knows both forms without
// reflect, and the address is a net.Addr the caller boxed once (as kcp-go
// and the relay's carrier do); passing a ClientID value instead would box it
// on every call.
//
// The test runs under the race detector too: there sync.Pool drops a
// quarter of the items put back at random, which costs about 0.7
// allocations per packet on average (a buffer or a box made anew), and
// testing.AllocsPerRun's integer division still reads 0; one allocation per
// packet more reads 1 and fails, with or without the race detector.
func TestQueuePacketConnAllocs(t *testing.T) {
	id := NewClientID()
	for _, form := range []struct {
		name string
		addr net.Addr
	}{
		{"ClientID.Addr", id.Addr()},
		{"ClientID", id},
	} {
		t.Run(form.name, func(t *testing.T) {
			addr := form.addr
			conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 1400)
			defer conn.Close()
			q := conn.OutgoingQueue(addr)
			full := NewQueuePacketConn(emptyAddr{}, time.Hour, 1400)
			defer full.Close()
			p := bytes.Repeat([]byte{'x'}, 1400)
			buf := make([]byte, 1500)
			for range max(QueueSize, OutgoingQueueSize) {
				full.QueueIncoming(p, addr)
				if _, err := full.WriteTo(p, addr); err != nil {
					t.Fatal(err)
				}
			}
			tests := []struct {
				name string
				f    func()
			}{
				{"QueueIncoming+ReadFrom", func() {
					conn.QueueIncoming(p, addr)
					_, from, err := conn.ReadFrom(buf)
					if err != nil {
						t.Fatal(err)
					}
					if from != addr {
						t.Fatalf("ReadFrom: from %v, want %v", from, addr)
					}
				}},
				{"WriteTo+OutgoingQueue+Restore", func() {
					if _, err := conn.WriteTo(p, addr); err != nil {
						t.Fatal(err)
					}
					conn.Restore(<-conn.OutgoingQueue(addr))
				}},
				{"WriteTo+Restore, held queue", func() {
					if _, err := conn.WriteTo(p, addr); err != nil {
						t.Fatal(err)
					}
					conn.Restore(<-q)
				}},
				{"QueueIncoming, queue full", func() { full.QueueIncoming(p, addr) }},
				{"WriteTo, queue full", func() {
					if _, err := full.WriteTo(p, addr); err != nil {
						t.Fatal(err)
					}
				}},
			}
			for _, tt := range tests {
				for range 10 { // fill the pools before counting
					tt.f()
				}
				if allocs := testing.AllocsPerRun(1000, tt.f); allocs != 0 {
					t.Errorf("%s: %v allocations per packet, want 0", tt.name, allocs)
				}
			}
			if st := full.Stats(); st.IncomingDropped == 0 || st.OutgoingDropped == 0 {
				t.Errorf("the full queues dropped nothing: %+v", st)
			}
		})
	}
}

// TestClientAddrStringAllocs locks what kcp-go's Listener pays per incoming
// packet to find the packet's session (l.sessions[addr.String()]): nothing
// with ClientID.Addr, which returns the string it made once; 1 allocation
// (the 16-byte hex string) with a bare ClientID. Measured with go1.26.
func TestClientAddrStringAllocs(t *testing.T) {
	id := NewClientID()
	tests := []struct {
		name  string
		addr  net.Addr
		floor float64
	}{
		{"ClientID.Addr", id.Addr(), 0},
		{"ClientID", id, 1},
	}
	for _, tt := range tests {
		if got := tt.addr.String(); got != id.String() {
			t.Errorf("%s: String() = %q, want %q", tt.name, got, id.String())
		}
		var s string
		allocs := testing.AllocsPerRun(1000, func() { s = tt.addr.String() })
		if s == "" || allocs != tt.floor {
			t.Errorf("%s: String allocates %v times, want %v", tt.name, allocs, tt.floor)
		}
	}
}
