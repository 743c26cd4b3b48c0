package udpbatch

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/pion/transport/v5"
	"golang.org/x/sys/unix"
)

// maxSegments bounds the datagrams of one GSO send (UDP_MAX_SEGMENTS: 64
// in every kernel with GSO, 128 in recent ones), and maxSendBytes its payload (what one IP packet
// holds, less headers).
const (
	maxSegments  = 64
	maxSendBytes = 65000
)

// Wrap returns c with batched writes if the kernel offers UDP GSO on it
// and coalesced reads if it offers UDP GRO, their buffers from bufs; c
// itself if neither. The returned connection owns c.
func Wrap(c *net.UDPConn, bufs *Buffers) transport.UDPConn {
	gso, gro := probe(c)
	if !gso && !gro {
		return c
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return c
	}
	b := &Conn{c: c, raw: raw, bufs: bufs, gro: gro}
	b.tryRead = b.read
	if gso {
		b.w = newWriter(c, bufs)
	}
	return b
}

// probe reports whether c can send with UDP_SEGMENT (the option reads back)
// and whether UDP_GRO could be turned on.
func probe(c *net.UDPConn) (gso, gro bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return false, false
	}
	_ = raw.Control(func(fd uintptr) {
		_, err := unix.GetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_SEGMENT)
		gso = err == nil
		gro = unix.SetsockoptInt(int(fd), unix.SOL_UDP, unix.UDP_GRO, 1) == nil
	})
	return gso, gro
}

// Conn is a UDP socket with batched I/O. Its methods may be called from
// several goroutines at once.
type Conn struct {
	c       *net.UDPConn
	raw     syscall.RawConn       // c's, for reads that wait without a buffer
	tryRead func(fd uintptr) bool // b.read, made once
	bufs    *Buffers
	w       *writer // nil: writes go straight to c
	gro     bool

	rmu     sync.Mutex // one read at a time; guards what follows
	rbuf    *[]byte    // the coalesced read being handed out, nil between reads
	oob     [64]byte
	rest    []byte // what of rbuf is not handed out yet
	segment int    // its datagrams' size (the last may be shorter)
	from    netip.AddrPort
	zone    zoneName // the last IPv6 zone seen
	rerr    error    // read's error, for fill
}

// ReadFromAddrPort reads one datagram into b; like a plain UDP read, the
// part of a datagram longer than b is lost.
func (b *Conn) ReadFromAddrPort(p []byte) (int, netip.AddrPort, error) {
	if !b.gro {
		return b.c.ReadFromUDPAddrPort(p)
	}
	b.rmu.Lock()
	defer b.rmu.Unlock()
	if b.rbuf == nil {
		if err := b.fill(); err != nil {
			return 0, netip.AddrPort{}, err
		}
	}
	d := b.rest[:min(b.segment, len(b.rest))]
	b.rest = b.rest[len(d):]
	n := copy(p, d)
	if len(b.rest) == 0 {
		b.bufs.reads.Put(b.rbuf)
		b.rbuf = nil
	}
	return n, b.from, nil
}

// fill waits until the socket has a datagram, then reads it, coalesced
// with those behind it, into a buffer of bufs, so that a socket waiting
// for data holds none.
func (b *Conn) fill() error {
	err := b.raw.Read(b.tryRead)
	if err == nil && b.rerr != nil {
		err = os.NewSyscallError("recvmsg", b.rerr)
	}
	b.rerr = nil
	if err != nil {
		return &net.OpError{Op: "read", Net: "udp", Source: b.c.LocalAddr(), Err: unwrapRaw(err)}
	}
	return nil
}

// read is fill's read of the socket fd: false, holding no buffer, if
// it has nothing to read; its error goes to rerr.
func (b *Conn) read(fd uintptr) bool {
	buf := b.bufs.reads.Get().(*[]byte)
	var n, oobn int
	var from unix.Sockaddr
	var err error
	for {
		n, oobn, _, from, err = unix.Recvmsg(int(fd), *buf, b.oob[:], 0)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		b.bufs.reads.Put(buf)
		if err == unix.EAGAIN {
			return false
		}
		b.rerr = err
		return true
	}
	b.rbuf, b.rest = buf, (*buf)[:n]
	b.from = b.zone.addrPort(from)
	b.segment = groSegment(b.oob[:oobn])
	if b.segment <= 0 || b.segment > n {
		b.segment = n
	}
	return true
}

// unwrapRaw returns the cause of an error of RawConn.Read (a closed
// socket, a deadline), which wraps it in an OpError of its own.
func unwrapRaw(err error) error {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Err
	}
	return err
}

// zoneName turns a received socket address into an address and port as
// the net package does, with an IPv6 zone by its interface's name; it
// remembers the last interface looked up.
type zoneName struct {
	index int
	name  string
}

func (z *zoneName) addrPort(sa unix.Sockaddr) netip.AddrPort {
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		return netip.AddrPortFrom(netip.AddrFrom4(sa.Addr), uint16(sa.Port))
	case *unix.SockaddrInet6:
		a := netip.AddrFrom16(sa.Addr)
		if sa.ZoneId != 0 {
			a = a.WithZone(z.lookup(int(sa.ZoneId)))
		}
		return netip.AddrPortFrom(a, uint16(sa.Port))
	}
	return netip.AddrPort{}
}

func (z *zoneName) lookup(index int) string {
	if index != z.index {
		z.index, z.name = index, strconv.Itoa(index)
		if ifi, err := net.InterfaceByIndex(index); err == nil {
			z.name = ifi.Name
		}
	}
	return z.name
}

// groSegment returns the datagram size of a coalesced read from its
// control messages, 0 if the read holds one datagram.
func groSegment(oob []byte) int {
	for len(oob) >= unix.CmsgLen(0) {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_UDP && h.Type == unix.UDP_GRO && len(data) >= 4 {
			return int(binary.NativeEndian.Uint32(data))
		}
		oob = rest
	}
	return 0
}

// WriteToAddrPort queues p for addr; it returns at once unless MaxQueued
// bytes are queued. Send errors other than the socket's closing are not
// reported, as a datagram lost on the way is not; a write deadline bounds
// the sending goroutine's system calls, not the wait for room.
func (b *Conn) WriteToAddrPort(p []byte, addr netip.AddrPort) (int, error) {
	if b.w == nil {
		return b.c.WriteToUDPAddrPort(p, addr)
	}
	return b.w.queue(p, addr)
}

// Close sends what is queued, then closes the socket.
func (b *Conn) Close() error {
	if b.w != nil {
		b.w.close()
	}
	return b.c.Close()
}

func (b *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, from, err := b.ReadFromAddrPort(p)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

func (b *Conn) ReadFromUDP(p []byte) (int, *net.UDPAddr, error) {
	n, from, err := b.ReadFromAddrPort(p)
	if err != nil {
		return n, nil, err
	}
	return n, net.UDPAddrFromAddrPort(from), nil
}

func (b *Conn) Read(p []byte) (int, error) {
	n, _, err := b.ReadFromAddrPort(p)
	return n, err
}

// ReadMsgUDP reads one datagram and no control message: those of a
// coalesced read belong to all its datagrams.
func (b *Conn) ReadMsgUDP(p, _ []byte) (n, oobn, flags int, addr *net.UDPAddr, err error) {
	n, addr, err = b.ReadFromUDP(p)
	return n, 0, 0, addr, err
}

func (b *Conn) WriteTo(p []byte, addr net.Addr) (int, error) {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, &net.OpError{Op: "write", Net: "udp", Addr: addr, Err: syscall.EINVAL}
	}
	return b.WriteToAddrPort(p, ua.AddrPort())
}

func (b *Conn) WriteToUDP(p []byte, addr *net.UDPAddr) (int, error) {
	return b.WriteToAddrPort(p, addr.AddrPort())
}

// Write sends p to the socket's peer; only a connected socket has one.
func (b *Conn) Write(p []byte) (int, error) {
	ra, ok := b.c.RemoteAddr().(*net.UDPAddr)
	if !ok {
		return b.c.Write(p) // fails as the socket would
	}
	return b.WriteToAddrPort(p, ra.AddrPort())
}

// WriteMsgUDP sends p with control messages oob, after what is queued.
func (b *Conn) WriteMsgUDP(p, oob []byte, addr *net.UDPAddr) (n, oobn int, err error) {
	if b.w != nil {
		b.w.drain()
	}
	return b.c.WriteMsgUDP(p, oob, addr)
}

// SyscallConn gives the socket, for options; reading or writing it
// directly bypasses the batches.
func (b *Conn) SyscallConn() (syscall.RawConn, error) { return b.c.SyscallConn() }

func (b *Conn) LocalAddr() net.Addr                { return b.c.LocalAddr() }
func (b *Conn) RemoteAddr() net.Addr               { return b.c.RemoteAddr() }
func (b *Conn) SetDeadline(t time.Time) error      { return b.c.SetDeadline(t) }
func (b *Conn) SetReadDeadline(t time.Time) error  { return b.c.SetReadDeadline(t) }
func (b *Conn) SetWriteDeadline(t time.Time) error { return b.c.SetWriteDeadline(t) }
func (b *Conn) SetReadBuffer(n int) error          { return b.c.SetReadBuffer(n) }
func (b *Conn) SetWriteBuffer(n int) error         { return b.c.SetWriteBuffer(n) }

// datagram is one queued datagram: buf[off:off+n] of its batch.
type datagram struct {
	off, n int
	to     netip.AddrPort
}

// batch is the queue the writer fills while the sender sends the other.
// Its buffer comes from the pool when the first datagram is added and
// goes back when the writer has nothing left to send (release), so that
// the many sockets that are quiet at a time hold none.
type batch struct {
	pool *sync.Pool // Buffers.batches
	bp   *[]byte    // buf's, from pool; nil while released
	buf  []byte
	msgs []datagram
}

func (q *batch) add(p []byte, to netip.AddrPort) {
	if q.bp == nil {
		q.bp = q.pool.Get().(*[]byte)
		q.buf = (*q.bp)[:0]
	}
	q.msgs = append(q.msgs, datagram{off: len(q.buf), n: len(p), to: to})
	q.buf = append(q.buf, p...)
}

func (q *batch) reset() {
	q.buf, q.msgs = q.buf[:0], q.msgs[:0]
}

// release gives an empty batch's buffer back to the pool.
func (q *batch) release() {
	if q.bp != nil {
		*q.bp = q.buf[:0]
		q.pool.Put(q.bp)
		q.bp, q.buf = nil, nil
	}
}

// writer queues datagrams and sends them from a goroutine of its own.
type writer struct {
	c *net.UDPConn

	mu      sync.Mutex
	room    *sync.Cond // signalled when the sender takes the queue
	pending batch
	closed  bool
	sending bool // the sender holds a batch

	wake chan struct{} // a token: pending was empty and is not
	done chan struct{} // closed when the sender has returned

	// Only the sender's:
	spare batch
	oob   []byte
	gso   bool
}

func newWriter(c *net.UDPConn, bufs *Buffers) *writer {
	w := &writer{
		c:       c,
		pending: batch{pool: &bufs.batches},
		spare:   batch{pool: &bufs.batches},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
		oob:     make([]byte, unix.CmsgSpace(2)),
		gso:     true,
	}
	w.room = sync.NewCond(&w.mu)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&w.oob[0]))
	h.Level, h.Type = unix.SOL_UDP, unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	go w.send()
	return w
}

func (w *writer) queue(p []byte, to netip.AddrPort) (int, error) {
	w.mu.Lock()
	for !w.closed && len(w.pending.buf) > 0 && len(w.pending.buf)+len(p) > MaxQueued {
		w.room.Wait()
	}
	if w.closed {
		w.mu.Unlock()
		return 0, net.ErrClosed
	}
	wasEmpty := len(w.pending.msgs) == 0
	w.pending.add(p, to)
	w.mu.Unlock()
	if wasEmpty {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// drain waits until everything queued so far has been handed to the kernel.
func (w *writer) drain() {
	w.mu.Lock()
	for !w.closed && (len(w.pending.msgs) > 0 || w.sending) {
		w.room.Wait()
	}
	w.mu.Unlock()
}

// close stops the writer after it has sent what is queued; queue fails
// from then on.
func (w *writer) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		<-w.done
		return
	}
	w.closed = true
	w.room.Broadcast()
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	// A send blocks only while the kernel's buffer is full; bound it.
	_ = w.c.SetWriteDeadline(time.Now().Add(time.Second))
	<-w.done
}

// send takes the queue whenever it is not empty and sends it, until the
// writer is closed and nothing is left.
func (w *writer) send() {
	defer close(w.done)
	for {
		w.mu.Lock()
		for len(w.pending.msgs) == 0 {
			w.sending = false
			w.room.Broadcast()
			w.pending.release()
			w.spare.release()
			if w.closed {
				w.mu.Unlock()
				return
			}
			w.mu.Unlock()
			<-w.wake
			// The goroutine that woke us is likely to queue more: pion
			// writes a burst of packets one by one and waits on a
			// goroutine of its own after each, which would run us first
			// (the runtime runs the goroutine readied last) and send each
			// packet alone. Step back until the runnable goroutines of
			// this processor have run.
			runtime.Gosched()
			w.mu.Lock()
		}
		w.pending, w.spare = w.spare, w.pending
		w.sending = true
		w.room.Broadcast()
		w.mu.Unlock()

		w.sendBatch(&w.spare)
		w.spare.reset()
	}
}

// sendBatch sends q's datagrams in order, each run that GSO can take as one
// system call.
func (w *writer) sendBatch(q *batch) {
	for i := 0; i < len(q.msgs); {
		j := w.run(q.msgs, i)
		first, last := q.msgs[i], q.msgs[j-1]
		if j-i > 1 && w.sendGSO(q.buf[first.off:last.off+last.n], first.n, first.to) {
			i = j
			continue
		}
		for ; i < j; i++ {
			m := q.msgs[i]
			if _, err := w.c.WriteToUDPAddrPort(q.buf[m.off:m.off+m.n], m.to); errors.Is(err, net.ErrClosed) {
				return
			}
		}
	}
}

// run returns the end of the run of datagrams starting at msgs[i] that one
// GSO send can carry: one address, one size (the last may be shorter).
func (w *writer) run(msgs []datagram, i int) int {
	if !w.gso {
		return i + 1
	}
	size, to, total := msgs[i].n, msgs[i].to, msgs[i].n
	j := i + 1
	for ; j < len(msgs) && j-i < maxSegments; j++ {
		m := msgs[j]
		if m.to != to || m.n > size || total+m.n > maxSendBytes {
			break
		}
		total += m.n
		if m.n < size {
			return j + 1
		}
	}
	return j
}

// sendGSO sends payload as datagrams of segment bytes; false if the kernel
// refused the send as such, in which case GSO is off from then on and the
// caller sends the datagrams one by one.
func (w *writer) sendGSO(payload []byte, segment int, to netip.AddrPort) bool {
	binary.NativeEndian.PutUint16(w.oob[unix.CmsgLen(0):], uint16(segment))
	_, _, err := w.c.WriteMsgUDPAddrPort(payload, w.oob, to)
	var errno syscall.Errno
	if errors.As(err, &errno) && (errno == syscall.EIO || errno == syscall.EINVAL || errno == syscall.EMSGSIZE || errno == syscall.ENOPROTOOPT) {
		// No checksum offload on the way out (EIO), a datagram over the
		// device's or the path's MTU (EINVAL, EMSGSIZE): the datagrams go
		// one by one.
		w.gso = false
		return false
	}
	return true
}
