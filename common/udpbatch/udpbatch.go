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

// MaxQueued bounds the bytes of datagrams queued and not yet handed to the
// kernel; a writer waits for room beyond it.
const MaxQueued = 128 << 10
