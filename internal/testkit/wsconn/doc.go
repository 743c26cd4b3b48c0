// Package wsconn turns a gorilla *websocket.Conn into a net.Conn: the
// tests' proxies speak to the relay through it. (The relay used it until
// its own WebSocket server; no production code does now.)
//
// Unlike Snowflake's adaptor, it uses no io.Pipe and starts no goroutine:
// Read pulls bytes straight from the current WebSocket message reader
// (asking gorilla for the next message when one is used up), and Write sends
// its buffer as exactly one binary message with WriteMessage, which on the
// server side takes gorilla's single-frame fast path (no messageWriter, no
// allocation). Message boundaries are not preserved on the read side: the
// connection is a byte stream, as the turbotunnel encapsulation expects.
//
// Reading accepts binary and text messages (gorilla handles control frames
// itself). A close frame with code 1000 (normal closure) or 1005 (no status)
// reads as io.EOF; other close codes are returned as gorilla's *CloseError.
//
// Concurrency follows gorilla's contract: at most one goroutine reads and at
// most one goroutine writes at a time; Close, LocalAddr, RemoteAddr and the
// deadline setters may be called from any goroutine. Close sends a
// best-effort close frame (bounded by a short deadline), then closes the
// socket, which wakes a Read or Write blocked in another goroutine. Close is
// idempotent; Read and Write after Close return an error matching both
// net.ErrClosed and io.ErrClosedPipe.
//
// Gorilla makes read errors permanent: after a read deadline expires the
// connection cannot be read again (the timeout error is returned by every
// later Read). Write deadlines behave the same way for writes.
package wsconn
