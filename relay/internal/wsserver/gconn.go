package wsserver

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/gobwas/ws"
)

// gPools are the buffers gConns borrow.
type gPools struct {
	read  sync.Pool // *reader
	write sync.Pool // *frameBuffer
}

func newGPools() *gPools {
	p := &gPools{}
	p.read.New = func() any { return &reader{Reader: *bufio.NewReaderSize(nil, ReadBufferSize)} }
	p.write.New = func() any { return &frameBuffer{buf: make([]byte, 0, WriteBufferSize)} }
	return p
}

// reader is a pooled read buffer, with what parsing a header takes.
type reader struct {
	bufio.Reader
	hr   bytes.Reader // over the bytes of a header being parsed
	hbuf [ws.MaxHeaderSize - 2]byte
}

// frameBuffer is a pooled frame being encoded: ws.WriteHeaderBuffer
// writes the header into it (through Write, with scratch as its own
// buffer), then the payload is appended, and the whole goes out in one
// write.
type frameBuffer struct {
	scratch [ws.MaxHeaderSize]byte
	buf     []byte
}

func (f *frameBuffer) Write(p []byte) (int, error) {
	f.buf = append(f.buf, p...)
	return len(p), nil
}

// gConn is Conn over gobwas/ws: the library reads and checks frame
// headers, unmasks and encodes frames; gConn borrows and gives back the
// buffers and keeps the connection's state.
type gConn struct {
	conn  net.Conn
	raw   net.Conn
	pools *gPools

	// Owned by the reader.
	r        *reader // borrowed; reads gSource; nil while released
	spare    []byte  // unread bytes kept while r is released
	remain   int64   // payload bytes left in the current data frame
	mask     [4]byte // of the current data frame
	maskOff  int
	state    ws.State // server side, and fragmented while a message continues
	rerr     error
	closeSnt bool // guarded by wmu

	writeDeadline atomic.Int64
	wmu           sync.Mutex
	wfailed       atomic.Bool

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

// gSource is what a gConn's borrowed reader reads: the spare bytes, then
// the connection.
type gSource gConn

func (s *gSource) Read(p []byte) (int, error) {
	if len(s.spare) > 0 {
		n := copy(p, s.spare)
		s.spare = s.spare[n:]
		if len(s.spare) == 0 {
			s.spare = nil
		}
		return n, nil
	}
	return s.conn.Read(p)
}

// upgradeG is Upgrade for a gConn.
func upgradeG(w http.ResponseWriter, req *http.Request, pools *gPools, timeout time.Duration) (*gConn, error) {
	u := ws.HTTPUpgrader{Timeout: timeout}
	nc, rw, _, err := u.Upgrade(req, hijackWriter{w})
	if err != nil {
		if nc != nil {
			nc.Close()
		}
		return nil, fmt.Errorf("%w: %w", ErrHandshake, err)
	}
	c := &gConn{conn: nc, raw: underlying(nc), pools: pools, state: ws.StateServerSide}
	// A client may send its first frame right behind the request.
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		c.spare = append([]byte(nil), b...)
	}
	return c, nil
}

// hijackWriter gives the upgrader a writer for its response when the
// server's Hijack gives none.
type hijackWriter struct{ http.ResponseWriter }

func (h hijackWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	nc, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil && rw.Writer == nil {
		rw.Writer = bufio.NewWriterSize(nc, 256)
	}
	return nc, rw, err
}

func (h hijackWriter) Unwrap() http.ResponseWriter { return h.ResponseWriter }

func (c *gConn) Read(p []byte) (int, error) {
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
	n, err := c.r.Read(p[:min(int64(len(p)), c.remain)])
	ws.Cipher(p[:n], c.mask, c.maskOff)
	c.maskOff += n
	c.remain -= int64(n)
	if n > 0 {
		return n, nil
	}
	return 0, c.readError(err, true)
}

// Release gives the read buffer back, keeping what it holds unread aside.
func (c *gConn) Release() {
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

func (c *gConn) borrow() {
	if c.r != nil {
		return
	}
	c.r = c.pools.read.Get().(*reader)
	c.r.Reset((*gSource)(c))
}

func (c *gConn) readError(err error, inFrame bool) error {
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

// peekHeader parses the next frame header from the read buffer without
// consuming it, so that a timeout can be retried; it returns the header
// and its length.
func (c *gConn) peekHeader() (ws.Header, int, error) {
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
			return ws.Header{}, 0, c.protocolError(err.Error())
		}
	}
}

// nextFrame reads the next frame header: a data frame's payload is then
// read by Read; a control frame, once whole in the buffer, is handled here.
func (c *gConn) nextFrame() error {
	h, n, err := c.peekHeader()
	if err != nil {
		return err
	}
	if err := ws.CheckHeader(h, c.state); err != nil {
		return c.protocolError(err.Error())
	}
	if h.OpCode.IsControl() {
		b, err := c.r.Peek(n + int(h.Length))
		if len(b) < n+int(h.Length) {
			return c.readError(err, true)
		}
		err = c.control(h, b[n:])
		_, _ = c.r.Discard(len(b))
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
func (c *gConn) control(h ws.Header, payload []byte) error {
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
		return c.protocolError("close frame of one byte")
	}
	code, reason := ws.ParseCloseFrameDataUnsafe(payload)
	if !code.Empty() {
		if err := ws.CheckCloseFrameData(code, reason); err != nil {
			return c.protocolError(err.Error())
		}
	}
	var answer []byte
	if !code.Empty() {
		answer = ws.NewCloseFrameBody(code, "")
	}
	_ = c.writeControl(ws.OpClose, answer, controlTimeout)
	if code.Empty() || code == ws.StatusNormalClosure {
		c.rerr = io.EOF
	} else {
		c.rerr = &CloseError{Code: int(code)}
	}
	return c.rerr
}

func (c *gConn) protocolError(reason string) error {
	_ = c.writeControl(ws.OpClose, ws.NewCloseFrameBody(ws.StatusProtocolError, ""), closeFrameTimeout)
	c.rerr = fmt.Errorf("%w: %s", ErrProtocol, reason)
	return c.rerr
}

func (c *gConn) Write(p []byte) (int, error) {
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

func (c *gConn) writeControl(op ws.OpCode, payload []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeControlLocked(op, payload, timeout)
}

func (c *gConn) writeControlLocked(op ws.OpCode, payload []byte, timeout time.Duration) error {
	if c.closeSnt {
		return nil
	}
	if op == ws.OpClose {
		c.closeSnt = true
	}
	return c.writeFrameLocked(op, payload, time.Now().Add(timeout))
}

func (c *gConn) writeFrameLocked(op ws.OpCode, p []byte, deadline time.Time) error {
	if c.wfailed.Load() {
		return errWriteFailed
	}
	if err := c.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	f := c.pools.write.Get().(*frameBuffer)
	defer func() {
		f.buf = f.buf[:0]
		c.pools.write.Put(f)
	}()
	h := ws.Header{Fin: true, OpCode: op, Length: int64(len(p))}
	if err := ws.WriteHeaderBuffer(f, h, f.scratch[:]); err != nil {
		return err
	}
	var err error
	if len(f.buf)+len(p) <= cap(f.buf) {
		f.buf = append(f.buf, p...)
		_, err = c.conn.Write(f.buf)
	} else if _, err = c.conn.Write(f.buf); err == nil {
		_, err = c.conn.Write(p)
	}
	if err != nil {
		c.wfailed.Store(true)
	}
	return err
}

func (c *gConn) Close() error {
	c.closeOnce.Do(func() {
		c.closed.Store(true)
		conn := c.conn
		if c.wmu.TryLock() {
			_ = c.writeControlLocked(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""), closeFrameTimeout)
			c.wmu.Unlock()
		} else {
			conn = c.raw
		}
		if c.wfailed.Load() {
			conn = c.raw
		}
		if err := conn.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			c.closeErr = err
		}
	})
	return c.closeErr
}

func (c *gConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.raw.(syscall.Conn)
	if !ok {
		return nil, errors.ErrUnsupported
	}
	return sc.SyscallConn()
}

func (c *gConn) LocalAddr() net.Addr  { return c.conn.LocalAddr() }
func (c *gConn) RemoteAddr() net.Addr { return c.conn.RemoteAddr() }

func (c *gConn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *gConn) SetReadDeadline(t time.Time) error { return c.conn.SetReadDeadline(t) }

func (c *gConn) SetWriteDeadline(t time.Time) error {
	var ns int64
	if !t.IsZero() {
		ns = max(t.UnixNano(), 1)
	}
	c.writeDeadline.Store(ns)
	return c.conn.SetWriteDeadline(t)
}
