package wsserver

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Buffer sizes. Buffers are borrowed per read and per write, never held by
// an idle connection.
const (
	// ReadBufferSize is the read buffer: about three frames of one KCP
	// packet each per read.
	ReadBufferSize = 4096
	// WriteBufferSize is the write buffer, in which a frame's header and
	// payload go out in one write (one TLS record: at most 16 KiB). The
	// relay batches the packets waiting for a carrier into messages this
	// large: a system call per message is most of what sending costs, and
	// with 4 KiB messages (two KCP packets) a loaded relay made four
	// times as many (docs/performance.md, "Many users").
	WriteBufferSize = 16 << 10
	// maxServerHeader is the longest header of an unmasked frame.
	maxServerHeader = 10
	// MaxSingleWrite is the largest message that goes out in one write;
	// larger ones take two.
	MaxSingleWrite = WriteBufferSize - maxServerHeader
)

const (
	// closeFrameTimeout bounds how long Close waits to send its close
	// frame.
	closeFrameTimeout = 500 * time.Millisecond
	// controlTimeout bounds writing a pong or the answer to a close frame.
	controlTimeout = 10 * time.Second
	// maxControlPayload is RFC 6455's limit for control frames.
	maxControlPayload = 125
)

// Opcodes and close codes (RFC 6455, sections 5.2 and 7.4).
const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa

	closeNormal     = 1000
	closeProtocol   = 1002
	closeNoStatus   = 1005
	finBit          = 0x80
	maskBit         = 0x80
	reservedBits    = 0x70
	opcodeBits      = 0x0f
	payloadLen16    = 126
	payloadLen64    = 127
	maxPayloadLen7  = 125
	maxPayloadLen16 = 0xffff
)

// Pools are the read and write buffers that Conns borrow. One Pools
// serves any number of Conns.
type Pools struct {
	read  sync.Pool // *[]byte of ReadBufferSize
	write sync.Pool // *[]byte of WriteBufferSize
}

// NewPools returns empty pools.
func NewPools() *Pools {
	p := &Pools{}
	p.read.New = func() any {
		b := make([]byte, ReadBufferSize)
		return &b
	}
	p.write.New = func() any {
		b := make([]byte, WriteBufferSize)
		return &b
	}
	return p
}

// Conn is one server-side WebSocket connection. See the package
// documentation for its semantics.
type Conn struct {
	conn  net.Conn // frames are read from and written to conn (a *tls.Conn for wss)
	raw   net.Conn // the connection under TLS, or conn
	pools *Pools

	// Owned by the reader.
	buf        *[]byte // borrowed read buffer; nil while released
	r, w       int     // unread bytes are (*buf)[r:w]
	spare      []byte  // unread bytes kept while the buffer is released
	remain     uint64  // payload bytes left in the current data frame
	mask       [4]byte
	maskPos    uint8 // 0 to 3
	fragmented bool  // a data message continues in the next frame
	closeSent  bool  // guarded by wmu; here, with the small fields, to keep Conn in a smaller size class
	rerr       error // permanent read error

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
	if c.r == c.w {
		// Read a large payload straight into p rather than through the
		// buffer.
		if len(p) >= len(*c.buf) && c.remain >= uint64(len(*c.buf)) {
			n, err := c.conn.Read(p[:min(uint64(len(p)), c.remain)])
			c.unmask(p[:n])
			c.remain -= uint64(n)
			if n > 0 {
				return n, nil
			}
			return 0, c.readError(err, true)
		}
		if err := c.fill(true); err != nil {
			return 0, err
		}
	}
	n := copy(p[:min(uint64(len(p)), c.remain)], (*c.buf)[c.r:c.w])
	c.unmask(p[:n])
	c.r += n
	c.remain -= uint64(n)
	return n, nil
}

// Release gives the read buffer back to the pool, keeping what it holds
// unread (at most the start of a frame) aside. The reader calls it before
// the connection idles. With TLS, the input buffers crypto/tls keeps for the
// connection's life stay: Go has no API to release them.
func (c *Conn) Release() {
	if c.buf == nil {
		return
	}
	if c.r < c.w {
		c.spare = append(c.spare[:0], (*c.buf)[c.r:c.w]...)
	}
	c.pools.read.Put(c.buf)
	c.buf, c.r, c.w = nil, 0, 0
}

// borrow takes a read buffer if c has none.
func (c *Conn) borrow() {
	if c.buf != nil {
		return
	}
	c.buf = c.pools.read.Get().(*[]byte)
	c.r, c.w = 0, copy(*c.buf, c.spare)
	c.spare = nil
}

// fill reads at least one byte more into the buffer, moving unread bytes
// to its start first if the buffer is full.
func (c *Conn) fill(inFrame bool) error {
	if c.w == len(*c.buf) {
		c.w = copy(*c.buf, (*c.buf)[c.r:c.w])
		c.r = 0
	}
	n, err := c.conn.Read((*c.buf)[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	return c.readError(err, inFrame || c.r < c.w)
}

// need makes at least n unread bytes (n <= ReadBufferSize) available.
func (c *Conn) need(n int) error {
	c.borrow()
	for c.w-c.r < n {
		if len(*c.buf)-c.r < n {
			c.w = copy(*c.buf, (*c.buf)[c.r:c.w])
			c.r = 0
		}
		if err := c.fill(false); err != nil {
			return err
		}
	}
	return nil
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

// nextFrame reads the next frame header: a data frame's payload is then
// read by Read; a control frame is handled here.
func (c *Conn) nextFrame() error {
	if err := c.need(2); err != nil {
		return err
	}
	b := (*c.buf)[c.r:]
	fin, op := b[0]&finBit != 0, b[0]&opcodeBits
	n := 2 + 4 // masked
	switch b[1] &^ maskBit {
	case payloadLen16:
		n += 2
	case payloadLen64:
		n += 8
	}
	if b[0]&reservedBits != 0 {
		return c.protocolError("reserved bits set")
	}
	if b[1]&maskBit == 0 {
		return c.protocolError("unmasked client frame")
	}
	if err := c.need(n); err != nil {
		return err
	}
	b = (*c.buf)[c.r:]
	length := uint64(b[1] &^ maskBit)
	switch length {
	case payloadLen16:
		length = uint64(binary.BigEndian.Uint16(b[2:]))
	case payloadLen64:
		length = binary.BigEndian.Uint64(b[2:])
		if length>>63 != 0 {
			return c.protocolError("payload length overflows")
		}
	}
	copy(c.mask[:], b[n-4:n])
	c.maskPos = 0
	c.r += n
	switch op {
	case opContinuation:
		if !c.fragmented {
			return c.protocolError("continuation outside a message")
		}
	case opText, opBinary:
		if c.fragmented {
			return c.protocolError("new message inside a fragmented one")
		}
	case opClose, opPing, opPong:
		if !fin || length > maxControlPayload {
			return c.protocolError("fragmented or long control frame")
		}
		return c.control(op, int(length))
	default:
		return c.protocolError("reserved opcode")
	}
	c.fragmented = !fin
	c.remain = length
	return nil
}

// control handles one control frame whose payload of length bytes is next.
func (c *Conn) control(op byte, length int) error {
	if err := c.need(length); err != nil {
		return err
	}
	payload := (*c.buf)[c.r : c.r+length]
	c.r += length
	c.unmask(payload)
	switch op {
	case opPing:
		// A pong that cannot be sent surfaces at the next Write.
		_ = c.writeControl(opPong, payload, controlTimeout)
		return nil
	case opPong:
		return nil
	}
	code := closeNoStatus
	switch {
	case length == 1:
		return c.protocolError("close frame of one byte")
	case length >= 2:
		code = int(binary.BigEndian.Uint16(payload))
	}
	var answer []byte
	if code != closeNoStatus {
		answer = binary.BigEndian.AppendUint16(nil, uint16(code))
	}
	_ = c.writeControl(opClose, answer, controlTimeout)
	if code == closeNormal || code == closeNoStatus {
		c.rerr = io.EOF
	} else {
		c.rerr = &CloseError{Code: code}
	}
	return c.rerr
}

// protocolError closes the WebSocket with code 1002 and ends reading.
func (c *Conn) protocolError(reason string) error {
	msg := binary.BigEndian.AppendUint16(nil, closeProtocol)
	_ = c.writeControl(opClose, msg, closeFrameTimeout)
	c.rerr = fmt.Errorf("%w: %s", ErrProtocol, reason)
	return c.rerr
}

// unmask unmasks b, the next payload bytes of the current frame.
func (c *Conn) unmask(b []byte) {
	pos := int(c.maskPos)
	for i := range b {
		b[i] ^= c.mask[pos&3]
		pos++
	}
	c.maskPos = uint8(pos & 3)
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
	if err := c.writeFrameLocked(opBinary, p, deadline); err != nil {
		if c.closed.Load() {
			return 0, errClosed
		}
		return 0, err
	}
	return len(p), nil
}

// writeControl sends a control frame within timeout, unless a close frame
// went out already.
func (c *Conn) writeControl(op byte, payload []byte, timeout time.Duration) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.writeControlLocked(op, payload, timeout)
}

func (c *Conn) writeControlLocked(op byte, payload []byte, timeout time.Duration) error {
	if c.closeSent {
		return nil
	}
	if op == opClose {
		c.closeSent = true
	}
	return c.writeFrameLocked(op, payload, time.Now().Add(timeout))
}

// writeFrameLocked writes one final frame; c.wmu is held. A failed write
// leaves the stream broken (a frame may have gone out in part, and TLS has
// spent a record's sequence number): every later write fails.
func (c *Conn) writeFrameLocked(op byte, p []byte, deadline time.Time) error {
	if c.wfailed.Load() {
		return errWriteFailed
	}
	if err := c.conn.SetWriteDeadline(deadline); err != nil {
		return err
	}
	bp := c.pools.write.Get().(*[]byte)
	defer c.pools.write.Put(bp)
	b := appendHeader((*bp)[:0], op, len(p))
	var err error
	if len(b)+len(p) <= cap(b) {
		_, err = c.conn.Write(append(b, p...))
	} else if _, err = c.conn.Write(b); err == nil {
		_, err = c.conn.Write(p)
	}
	if err != nil {
		c.wfailed.Store(true)
	}
	return err
}

// appendHeader appends the header of a final unmasked frame.
func appendHeader(b []byte, op byte, n int) []byte {
	b = append(b, finBit|op)
	switch {
	case n <= maxPayloadLen7:
		return append(b, byte(n))
	case n <= maxPayloadLen16:
		return binary.BigEndian.AppendUint16(append(b, payloadLen16), uint16(n))
	default:
		return binary.BigEndian.AppendUint64(append(b, payloadLen64), uint64(n))
	}
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
			_ = c.writeControlLocked(opClose, binary.BigEndian.AppendUint16(nil, closeNormal), closeFrameTimeout)
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
