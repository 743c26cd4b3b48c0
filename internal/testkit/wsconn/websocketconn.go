package wsconn

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// closeFrameTimeout bounds how long Close waits to send the close frame (for
// example behind a Write blocked on a full socket buffer).
const closeFrameTimeout = 500 * time.Millisecond

// Buffer sizes for gorilla's Upgrader and Dialer, chosen by
// BenchmarkServerReadBufferSize, BenchmarkServerWriteBufferSize and the relay's
// idle-memory measurement (docs/performance-log.md, 2026-11-29).
const (
	// RecommendedReadBufferSize is the size of gorilla's bufio read buffer.
	// Every connection holds it for its whole life (a reader blocked in
	// NextReader sits on it), so it dominates the cost of an idle
	// connection. 2048 holds a whole frame carrying one KCP packet (1403
	// bytes + header) so that such a message costs one read; it is 1.2x
	// faster than 1024 for such messages and keeps an idle relay carrier
	// at about 9 KiB of RSS, where 4096 costs 12.6 KiB.
	RecommendedReadBufferSize = 2048
	// RecommendedWriteBufferSize is the size of gorilla's write buffer. Use
	// it with a WriteBufferPool (a *sync.Pool will do) so that idle
	// connections hold none; messages larger than the buffer are still sent
	// as one frame.
	RecommendedWriteBufferSize = 4096
)

// Conn is a net.Conn over a gorilla WebSocket connection. See the package
// documentation for its semantics.
type Conn struct {
	ws *websocket.Conn

	// Owned by the reading goroutine.
	r    io.Reader // current message reader; nil between messages
	rerr error     // sticky read error

	// writeDeadline is the write deadline in Unix nanoseconds (0 = none),
	// applied by Write to gorilla before each message.
	writeDeadline atomic.Int64

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error // written once inside closeOnce
}

// New returns a net.Conn that reads and writes ws. The caller must not use
// ws directly afterwards (except through the returned Conn).
func New(ws *websocket.Conn) net.Conn {
	return &Conn{ws: ws}
}

// Read reads bytes from the current message, moving on to the next binary or
// text message when the current one is used up. Empty messages are skipped.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if c.r == nil {
			_, r, err := c.ws.NextReader()
			if err != nil {
				c.rerr = c.readError(err)
				return 0, c.rerr
			}
			c.r = r
		}
		n, err := c.r.Read(p)
		if err == io.EOF {
			// End of this message, not of the connection.
			c.r = nil
			if n > 0 {
				return n, nil
			}
			continue
		}
		if err != nil {
			c.rerr = c.readError(err)
			return n, c.rerr
		}
		return n, nil
	}
}

// readError maps a gorilla read error to what a net.Conn reader expects.
func (c *Conn) readError(err error) error {
	if c.closed.Load() {
		return errClosed
	}
	if websocket.IsCloseError(err, websocket.CloseNormalClosure, websocket.CloseNoStatusReceived) {
		return io.EOF
	}
	return err
}

// Write sends p as one binary WebSocket message. An empty p sends nothing.
func (c *Conn) Write(p []byte) (int, error) {
	if c.closed.Load() {
		return 0, errClosed
	}
	if len(p) == 0 {
		return 0, nil
	}
	var deadline time.Time
	if ns := c.writeDeadline.Load(); ns != 0 {
		deadline = time.Unix(0, ns)
	}
	// Only the writing goroutine calls ws.SetWriteDeadline, so this does not
	// race with gorilla's own use of the field.
	if err := c.ws.SetWriteDeadline(deadline); err != nil {
		return 0, err
	}
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		if c.closed.Load() {
			return 0, errClosed
		}
		return 0, err
	}
	return len(p), nil
}

// Close sends a close frame (best effort, bounded by a short deadline) and
// closes the underlying connection. It is safe to call more than once and
// concurrently with Read and Write.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		msg := websocket.FormatCloseMessage(websocket.CloseNormalClosure, "")
		// An error here (peer gone, write blocked) does not matter: the
		// socket is closed next either way.
		_ = c.ws.WriteControl(websocket.CloseMessage, msg, time.Now().Add(closeFrameTimeout))
		if err := c.ws.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.closeErr = err
		}
	})
	return c.closeErr
}

// LocalAddr returns the local address of the underlying connection.
func (c *Conn) LocalAddr() net.Addr { return c.ws.LocalAddr() }

// RemoteAddr returns the remote address of the underlying connection.
func (c *Conn) RemoteAddr() net.Addr { return c.ws.RemoteAddr() }

// SetDeadline sets both the read and the write deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// SetReadDeadline sets the read deadline. Expiry is permanent (see the
// package documentation).
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.ws.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for future Writes and for a Write
// blocked right now.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
		if ns == 0 {
			ns = 1
		}
	}
	c.writeDeadline.Store(ns)
	// Wake up (or extend) a Write blocked in the socket right now.
	return c.ws.UnderlyingConn().SetWriteDeadline(t)
}
