// Package wsserver is the server side of RFC 6455 WebSocket as the relay's
// carriers need it, made for many connections that are idle most of the
// time, over gobwas/ws: the library answers the opening handshake, reads,
// checks and unmasks frames and encodes them; this package borrows and
// gives back the buffers and keeps each connection's small state.
//
// Upgrade answers an opening handshake on a hijacked connection and returns
// a Conn, a net.Conn whose reads are the payload of consecutive data
// messages (a byte stream: message boundaries carry no meaning for the
// turbotunnel encapsulation) and whose every Write is one binary message.
// WriteWithHeadRoom sends a message the caller built behind room for the
// frame header, in one write and without a copy.
//
// Unlike gorilla/websocket, a Conn holds no buffer between reads: Read
// borrows a read buffer from a pool and Release gives it back, so an idle
// connection costs its struct and little else. With TLS it also keeps what
// crypto/tls keeps for a connection's life: a record buffer as large as the
// largest record read ahead (the ClientHello's at least) and a handshake
// buffer as large as the ClientHello; Go has no API to release them. A read
// timeout is not permanent (a Read may be retried after one, and a frame
// read in part continues: a header is parsed only once whole in the
// buffer), so that the caller can wait for a connection with short
// deadlines and hand it to a readiness poller between them.
//
// Reading answers pings with pongs, ignores pongs, rejects unmasked,
// reserved or malformed frames and invalid close codes (closing with a
// protocol-error close frame), and on a close frame answers it and returns
// io.EOF for code 1000 or none and an error naming the code otherwise.
//
// Concurrency: one goroutine reads at a time and one writes at a time
// (Read may write a pong or a close frame; writes are serialized inside);
// Close, Release, the deadline setters and the address methods may be
// called from any goroutine except that Release belongs to the reader.
// Close sends a close frame (best effort, bounded by a short deadline) and
// closes the socket. After a write failed, a TLS connection is closed
// without its close_notify alert: crypto/tls has already spent the failed
// record's sequence number, so the alert would reach the peer as
// "bad record MAC".
package wsserver
