package wsserver

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
)

// Buffer sizes. Buffers are borrowed per read and per write, never held by
// an idle connection.
const (
	// ReadBufferSize is the read buffer: about three frames of one KCP
	// packet each per read.
	ReadBufferSize = 4096
	// WriteBufferSize is the write buffer, in which a frame's header and
	// payload go out in one write. The relay batches the packets waiting
	// for a carrier into messages this large: a system call per message
	// is most of what sending costs (with 16 KiB messages a loaded relay
	// made twice as many, with 4 KiB eight times; docs/performance.md,
	// "Many users"). A message stays within 64 KiB − 1, the largest
	// DataChannel message a Snowflake client reads (pion's read buffer),
	// since a browser proxy passes each message on whole.
	WriteBufferSize = 64 << 10
	// maxServerHeader is the longest header of an unmasked frame.
	maxServerHeader = ws.MaxHeaderSize - 4
	// MaxSingleWrite is the largest message that goes out in one write;
	// larger ones take two.
	MaxSingleWrite = WriteBufferSize - maxServerHeader
	// HeadRoom is the room WriteWithHeadRoom needs in front of a message.
	HeadRoom = maxServerHeader
)

const (
	// closeFrameTimeout bounds how long Close waits to send its close
	// frame.
	closeFrameTimeout = 500 * time.Millisecond
	// controlTimeout bounds writing a pong or the answer to a close frame.
	controlTimeout = 10 * time.Second
)

// Pools are the read and write buffers that Conns borrow. One Pools
// serves any number of Conns.
type Pools struct {
	read  sync.Pool // *reader
	write sync.Pool // *frameBuffer
}

// NewPools returns empty pools.
func NewPools() *Pools {
	p := &Pools{}
	p.read.New = func() any { return &reader{Reader: *bufio.NewReaderSize(nil, ReadBufferSize)} }
	p.write.New = func() any { return &frameBuffer{buf: make([]byte, 0, WriteBufferSize)} }
	return p
}

// reader is a borrowed read buffer, with what parsing a frame header in it
// takes.
type reader struct {
	bufio.Reader
	hr   bytes.Reader // over the buffered bytes of a header
	hbuf [ws.MaxHeaderSize - 2]byte
}

// frameBuffer is a borrowed frame being encoded: ws.WriteHeaderBuffer
// writes the header into it through Write (with scratch as its own
// buffer), the payload is appended, and the whole goes out in one write.
type frameBuffer struct {
	scratch [ws.MaxHeaderSize]byte
	buf     []byte
}

func (f *frameBuffer) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	return len(p), nil
}

// Conn is one server-side WebSocket connection. See the package
// documentation for its semantics.
type Conn struct {
	conn  net.Conn // frames are read from and written to conn (a *tls.Conn for wss)
	raw   net.Conn // the connection under TLS, or conn
	pools *Pools

	// Owned by the reader.
	r       *reader  // borrowed; reads source; nil while released
	spare   []byte   // unread bytes kept while r is released
	remain  int64    // payload bytes left in the current data frame
	mask    [4]byte  // of the current data frame
	maskOff uint8    // position in mask, 0 to 3
	state   ws.State // server side; fragmented while a data message continues
	// closeSent is guarded by wmu; here, with the small fields, to keep
	// Conn in a smaller size class.
	closeSent bool
	rerr      error // permanent read error

	// writeDeadline is the data writes' deadline in Unix nanoseconds (0 =
	// none), applied before each message because control frames set
	// deadlines of their own.
	writeDeadline atomic.Int64
	wmu           sync.Mutex  // serializes frames
	wfailed       atomic.Bool // a write failed: the stream is broken

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error // written once inside closeOnce
}

// source is what a Conn's borrowed reader reads: the bytes kept aside
// when it was last released, then the connection.
type source Conn

func (s *source) Read(p []byte) (int, error) {
	if len(s.spare) > 0 {
		n := copy(p, s.spare)
		if s.spare = s.spare[n:]; len(s.spare) == 0 {
			s.spare = nil
		}
		return n, nil
	}
	return s.conn.Read(p)
}

// Read reads payload bytes of the current data message, moving on to the
// next message when it is used up. A timeout may be retried.
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for c.remain == 0 {
		if c.rerr != nil {
			return 0, c.rerr
		}
		if err := c.nextFrame(); err != nil {
			return 0, err
		}
	}
	if c.rerr != nil {
		return 0, c.rerr
	}
	c.borrow()
	// bufio reads a payload at least as large as its buffer straight
	// into p.
	n, err := c.r.Read(p[:min(int64(len(p)), c.remain)])
	ws.Cipher(p[:n], c.mask, int(c.maskOff))
	c.maskOff = uint8((int(c.maskOff) + n) & 3)
	c.remain -= int64(n)
	if n > 0 {
		return n, nil
	}
	return 0, c.readError(err, true)
}

// Release gives the read buffer back to the pool, keeping what it holds
// unread (at most the start of a frame, when the reader idles) aside.
// The reader calls it before the connection idles. With TLS, the input
// buffers crypto/tls keeps for the connection's life stay: Go has no API
// to release them.
func (c *Conn) Release() {
	if c.r == nil {
		return
	}
	if n := c.r.Buffered(); n > 0 {
		b, _ := c.r.Peek(n)
		c.spare = append(c.spare[:0:0], b...)
	}
	c.r.Reset(nil)
	c.pools.read.Put(c.r)
	c.r = nil
}

// borrow takes a read buffer if c has none.
func (c *Conn) borrow() {
	if c.r != nil {
		return
	}
	c.r = c.pools.read.Get().(*reader)
	c.r.Reset((*source)(c))
}

// readError records err as permanent unless it is a timeout, which the
// caller may retry. inFrame tells an end of the connection inside a frame
// from one between frames.
func (c *Conn) readError(err error, inFrame bool) error {
	if err == nil {
		err = io.ErrNoProgress
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() && !c.closed.Load() {
		return err
	}
	switch {
	case c.closed.Load():
		err = errClosed
	case errors.Is(err, io.EOF) && inFrame:
		err = io.ErrUnexpectedEOF
	}
	c.rerr = err
	return err
}

// peekHeader parses the next frame header in the read buffer without
// consuming it, so that a timeout in its middle can be retried; it
// returns the header and its length.
func (c *Conn) peekHeader() (ws.Header, int, error) {
	c.borrow()
	r := c.r
	need := ws.MinHeaderSize
	for {
		b, err := r.Peek(min(max(r.Buffered(), need), ws.MaxHeaderSize))
		if len(b) < need {
			return ws.Header{}, 0, c.readError(err, len(b) > 0)
		}
		r.hr.Reset(b)
		h, err := ws.ReadHeaderBuffer(&r.hr, r.hbuf[:])
		switch {
		case err == nil:
			return h, len(b) - r.hr.Len(), nil
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			need = len(b) + 1
		default:
			return ws.Header{}, 0, c.protocolError(err)
		}
	}
}

// nextFrame reads the next frame header: a data frame's payload is then
// read by Read; a control frame, once whole in the buffer, is handled
// here.
func (c *Conn) nextFrame() error {
	h, n, err := c.peekHeader()
	if err != nil {
		return err
	}
	if err := ws.CheckHeader(h, c.state); err != nil {
		return c.protocolError(err)
	}
	if h.OpCode.IsControl() {
		size := n + int(h.Length) // at most 14 + 125 bytes
		b, err := c.r.Peek(size)
		if len(b) < size {
			return c.readError(err, true)
		}
		err = c.control(h, b[n:])
		_, _ = c.r.Discard(size)
		return err
	}
	_, _ = c.r.Discard(n)
	if h.Fin {
		c.state = c.state.Clear(ws.StateFragmented)
	} else {
		c.state = c.state.Set(ws.StateFragmented)
	}
	c.remain, c.mask, c.maskOff = h.Length, h.Mask, 0
	return nil
}

// control handles a control frame whose payload, still masked, is in the
// read buffer.
func (c *Conn) control(h ws.Header, payload []byte) error {
	ws.Cipher(payload, h.Mask, 0)
	switch h.OpCode {
	case ws.OpPing:
		// A pong that cannot be sent surfaces at the next Write.
		_ = c.writeControl(ws.OpPong, payload, controlTimeout)
		return nil
	case ws.OpPong:
		return nil
	}
	if len(payload) == 1 {
		return c.protocolError(errShortClose)
	}
	code, reason := ws.ParseCloseFrameDataUnsafe(payload)
	var answer []byte
	if !code.Empty() {
		if err := ws.CheckCloseFrameData(code, reason); err != nil {
			return c.protocolError(err)
		}
		answer = ws.NewCloseFrameBody(code, "")
	}
	_ = c.writeControl(ws.OpClose, answer, controlTimeout)
	if code.Empty() || code == ws.StatusNormalClosure {
		c.rerr = io.EOF
	} else {
		c.rerr = &closeError{Code: int(code)}
	}
	return c.rerr
}

// protocolError closes the WebSocket with code 1002 and ends reading. err
// is one of gobwas/ws's errors, which quote nothing of the peer's.
func (c *Conn) protocolError(err error) error {
	_ = c.writeControl(ws.OpClose, ws.NewCloseFrameBody(ws.StatusProtocolError, ""), closeFrameTimeout)
	c.rerr = fmt.Errorf("%w: %w", errProtocol, err)
	return c.rerr
}

// Write sends p as one binary message. An empty p sends nothing.
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
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.writeFrameLocked(ws.OpBinary, p, deadline); err != nil {
		if c.closed.Load() {
			return 0, errClosed
		}
		return 0, err
	}
	return len(p), nil
}

// WriteWithHeadRoom sends b[HeadRoom:] as one binary message, in one
// write: it puts the frame's header into b[:HeadRoom], so that a caller
// that builds messages in a buffer of its own sends them without a copy
// (and without holding a second buffer while the peer is slow). b's
// payload is at most MaxSingleWrite bytes.
func (c *Conn) WriteWithHeadRoom(b []byte) (int, error) {
	if len(b) < HeadRoom || len(b)-HeadRoom > MaxSingleWrite {
		return 0, fmt.Errorf("%w: %d bytes with head room", errMessageSize, len(b))
	}
	if c.closed.Load() {
		return 0, errClosed
	}
	p := b[HeadRoom:]
	if len(p) == 0 {
		return 0, nil
	}
	var deadline time.Time
	if ns := c.writeDeadline.Load(); ns != 0 {
		deadline = time.Unix(0, ns)
	}
	h := putBinaryHeader(b[:HeadRoom], len(p))
	frame := b[HeadRoom-len(h):]
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.sendLocked(frame, deadline); err != nil {
		if c.closed.Load() {
			return 0, errClosed
		}
		return 0, err
	}
	return len(p), nil
}

// putBinaryHeader writes the header of an unmasked, final binary frame of
// n bytes at the end of room (at least maxServerHeader bytes), as RFC 6455
// section 5.2 lays it out, and returns it. (ws.WriteHeaderBuffer takes an
// io.Writer, through which a stack buffer escapes: an allocation per
// message.)
func putBinaryHeader(room []byte, n int) []byte {
	var h []byte
	switch {
	case n < 126:
		h = room[len(room)-2:]
		h[1] = byte(n)
	case n <= 0xffff:
		h = room[len(room)-4:]
		h[1] = 126
		binary.BigEndian.PutUint16(h[2:], uint16(n))
	default:
		h = room[len(room)-10:]
		h[1] = 127
		binary.BigEndian.PutUint64(h[2:], uint64(n))
	}
	h[0] = 0x80 | byte(ws.OpBinary) // FIN
	return h
}

// sendLocked writes b (a whole frame, or its header or payload); c.wmu is
// held. A failed write leaves the stream broken: every later write fails.
func (c *Conn) sendLocked(b []byte, deadline time.Time) error {
	if c.wfailed.Load() {
		return errWriteFailed
	}
	if err := c.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	if _, err := c.conn.Write(b); err != nil {
		c.wfailed.Store(true)
		return err
	}
	return nil
}

// writeControl sends a control frame within timeout, unless a close frame
// went out already.
func (c *Conn) writeControl(op ws.OpCode, payload []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeControlLocked(op, payload, timeout)
}

func (c *Conn) writeControlLocked(op ws.OpCode, payload []byte, timeout time.Duration) error {
	if c.closeSent {
		return nil
	}
	if op == ws.OpClose {
		c.closeSent = true
	}
	return c.writeFrameLocked(op, payload, time.Now().Add(timeout))
}

// writeFrameLocked writes one final frame; c.wmu is held. A failed write
// leaves the stream broken (a frame may have gone out in part, and TLS has
// spent a record's sequence number): every later write fails.
func (c *Conn) writeFrameLocked(op ws.OpCode, p []byte, deadline time.Time) error {
	f := c.pools.write.Get().(*frameBuffer)
	defer func() {
		f.buf = f.buf[:0]
		c.pools.write.Put(f)
	}()
	h := ws.Header{Fin: true, OpCode: op, Length: int64(len(p))}
	if err := ws.WriteHeaderBuffer(f, h, f.scratch[:]); err != nil {
		return err
	}
	if len(f.buf)+len(p) <= cap(f.buf) {
		f.buf = append(f.buf, p...)
		return c.sendLocked(f.buf, deadline)
	}
	if err := c.sendLocked(f.buf, deadline); err != nil {
		return err
	}
	return c.sendLocked(p, deadline)
}

// Close sends a close frame (best effort, bounded by a short deadline, and
// skipped if a write is under way) and closes the connection. It is safe to
// call more than once and concurrently with Read and Write.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		conn := c.conn
		if c.wmu.TryLock() {
			// An error here (peer gone, write blocked) does not matter: the
			// socket is closed next either way.
			_ = c.writeControlLocked(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""), closeFrameTimeout)
			c.wmu.Unlock()
		} else {
			// A write is under way: crypto/tls would close without its
			// alert anyway; closing under it wakes the writer.
			conn = c.raw
		}
		if c.wfailed.Load() {
			// No TLS close_notify after a failed record (see the package
			// documentation).
			conn = c.raw
		}
		if err := conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.closeErr = err
		}
	})
	return c.closeErr
}

// SyscallConn returns the socket under the WebSocket (and under TLS), for
// waiting on readiness.
func (c *Conn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

// LocalAddr returns the local address of the connection.
func (c *Conn) LocalAddr() net.Addr { return c.conn.LocalAddr() }

// RemoteAddr returns the remote address of the connection.
func (c *Conn) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

// SetDeadline sets both the read and the write deadline.
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

// SetReadDeadline sets the read deadline.
func (c *Conn) SetReadDeadline(t time.Time) error {
	return c.conn.SetReadDeadline(t)
}

// SetWriteDeadline sets the deadline for future Writes and for a Write
// blocked right now.
func (c *Conn) SetWriteDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = max(t.UnixNano(), 1)
	}
	c.writeDeadline.Store(ns)
	return c.conn.SetWriteDeadline(t)
}
