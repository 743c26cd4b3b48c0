// Package udpbatch cuts the system calls of a UDP socket that carries a
// bulk transfer in small datagrams, as pion's DTLS and SCTP do (one
// datagram of about 1 200 bytes per SCTP packet, and one system call each).
//
// Wrap returns the socket with batched I/O where the kernel offers it
// (Linux 4.18 and later for sending, 5.0 for receiving):
//
//   - Writes are queued and sent by a goroutine of the connection's own.
//     Whatever was queued while it was sending goes out together: each run
//     of equal-sized datagrams to one address (a shorter one may end it) as
//     a single UDP GSO send, which the kernel cuts into the same datagrams.
//     A writer waits once MaxQueued bytes are queued.
//   - Reads ask the kernel for coalesced datagrams (UDP GRO) and hand them
//     out one at a time.
//
// Buffers are pooled and held only while there is something in them: a
// socket waiting for data, or with nothing queued to send, holds none.
//
// What goes on the wire is unchanged: the same datagrams in the same order.
// Where the kernel lacks GSO or GRO, or the platform is not Linux, that
// half keeps one system call per datagram.
package udpbatch

import "sync"

// MaxQueued bounds the bytes of datagrams queued and not yet handed to the
// kernel; a writer waits for room beyond it.
const MaxQueued = 128 << 10

// readBufferSize is a read's buffer when GRO is on: the largest coalesced
// payload the kernel hands over.
const readBufferSize = 1 << 16

// Buffers pools the buffers of the sockets Wrap returns; the sockets that
// share one reuse each other's. A socket takes a buffer only while it
// holds datagrams: a client or proxy has a socket or two per peer, and a
// buffer kept by each would be 6.5 MB of live heap with 50 peers, a
// fifth of a proxy's.
type Buffers struct {
	reads   sync.Pool // *[]byte of readBufferSize, a coalesced read
	batches sync.Pool // *[]byte, a batch of queued sends
}

// NewBuffers returns an empty pool. A batch's buffer starts at 8 KiB and
// grows as the batch needs (to about MaxQueued): most sockets send a few
// small datagrams at a time.
func NewBuffers() *Buffers {
	b := &Buffers{}
	b.reads.New = func() any { p := make([]byte, readBufferSize); return &p }
	b.batches.New = func() any { p := make([]byte, 0, 8<<10); return &p }
	return b
}
