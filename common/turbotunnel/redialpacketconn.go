package turbotunnel

import (
	"context"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5/deadline"
)

// RedialBufferSize is the size of the buffers a RedialPacketConn reads
// carrier packets into (Snowflake's value); longer packets are truncated by
// the carrier.
const RedialBufferSize = 1500

// RedialStats counts a RedialPacketConn's drops and dials. Counters only
// grow.
type RedialStats struct {
	// RecvDropped counts packets read from a carrier and dropped because
	// the receive queue was full.
	RecvDropped uint64
	// SendDropped counts WriteTo packets dropped because the send queue
	// was full.
	SendDropped uint64
	// Dials counts carriers dialed successfully.
	Dials uint64
}

// RedialPacketConn is a long-lived net.PacketConn over a succession of
// transient carriers (client side of turbotunnel). It gets a carrier from
// the dial function, exchanges packets over it, and when a ReadFrom or WriteTo
// on the carrier fails it closes that carrier and dials the next one. Only a
// dial error (or Close) ends the RedialPacketConn; its ReadFrom and WriteTo
// then fail.
//
// Packets wait in two bounded queues of QueueSize packets, one each way, so
// WriteTo never blocks and packets written between carriers are sent on the
// next one; a full queue drops the packet and counts it. A packet being
// written when its carrier fails is lost (KCP retransmits).
//
// It runs one goroutine that dials and then writes to the current carrier,
// and one reader goroutine per carrier; Close stops them all and waits for
// them. The local and remote addresses are fixed, whatever the carriers'.
type RedialPacketConn struct {
	localAddr    net.Addr
	remoteAddr   net.Addr
	dial         func(context.Context) (net.PacketConn, error)
	pool         *bufferPool
	recvQueue    chan []byte
	sendQueue    chan []byte
	readDeadline *deadline.Deadline
	cancel       context.CancelFunc // cancels the context given to dial
	closed       chan struct{}
	closeOnce    sync.Once
	err          error          // written once, before closed is closed
	wg           sync.WaitGroup // the dial loop (which waits for its readers)

	recvDropped atomic.Uint64
	sendDropped atomic.Uint64
	dials       atomic.Uint64
}

// NewRedialPacketConn returns a RedialPacketConn with the given fixed
// addresses that gets its carriers from dial, and starts dialing the first
// one. dial must return promptly once its context is cancelled (Close
// cancels it and waits), must not call Close itself, and must return a
// carrier whose blocked ReadFrom returns when the carrier is closed.
func NewRedialPacketConn(localAddr, remoteAddr net.Addr, dial func(ctx context.Context) (net.PacketConn, error)) *RedialPacketConn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &RedialPacketConn{
		localAddr:    localAddr,
		remoteAddr:   remoteAddr,
		dial:         dial,
		pool:         newBufferPool(RedialBufferSize),
		recvQueue:    make(chan []byte, QueueSize),
		sendQueue:    make(chan []byte, QueueSize),
		readDeadline: deadline.New(),
		cancel:       cancel,
		closed:       make(chan struct{}),
	}
	c.wg.Add(1)
	go c.dialLoop(ctx)
	return c
}

// dialLoop dials carriers one after the other and serves each until it
// fails, until Close or a dial error.
func (c *RedialPacketConn) dialLoop(ctx context.Context) {
	defer c.wg.Done()
	for {
		conn, err := c.dial(ctx)
		if err == nil && conn == nil {
			err = ErrNilCarrier
		}
		if err != nil {
			if conn != nil {
				_ = conn.Close()
			}
			c.closeWithError(fmt.Errorf("%w: %w", ErrDial, err))
			return
		}
		c.dials.Add(1)
		c.exchange(conn)
		select {
		case <-c.closed:
			return
		default:
		}
	}
}

// exchange moves packets between the queues and conn until conn fails or c
// is closed, then closes conn and waits for its reader.
func (c *RedialPacketConn) exchange(conn net.PacketConn) {
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		c.readCarrier(conn)
	}()
	c.writeCarrier(conn, readerDone)
	_ = conn.Close()
	<-readerDone
}

// readCarrier puts the packets read from conn on the receive queue until a
// read fails.
func (c *RedialPacketConn) readCarrier(conn net.PacketConn) {
	for {
		buf := c.pool.get()
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			c.pool.put(buf)
			return
		}
		select {
		case c.recvQueue <- buf[:n]:
		default:
			c.recvDropped.Add(1)
			c.pool.put(buf)
		}
	}
}

// writeCarrier writes the packets of the send queue to conn until a write
// fails, the reader ends or c is closed.
func (c *RedialPacketConn) writeCarrier(conn net.PacketConn, readerDone <-chan struct{}) {
	for {
		select {
		case <-c.closed:
			return
		case <-readerDone:
			return
		case p := <-c.sendQueue:
			_, err := conn.WriteTo(p, c.remoteAddr)
			c.pool.put(p)
			if err != nil {
				return
			}
		}
	}
}

// ReadFrom returns the next packet received on any carrier, truncated to
// len(p), with the fixed remote address. It blocks until a packet arrives,
// the read deadline passes (an error whose Timeout() is true) or the conn
// ends: after Close the error matches net.ErrClosed, after a dial error it
// matches ErrDial and wraps the dial error.
func (c *RedialPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	timedOut := c.readDeadline.Done()
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", c.err)
	case <-timedOut:
		return 0, nil, c.opError("read", os.ErrDeadlineExceeded)
	default:
	}
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", c.err)
	case <-timedOut:
		return 0, nil, c.opError("read", os.ErrDeadlineExceeded)
	case buf := <-c.recvQueue:
		n := copy(p, buf)
		c.pool.put(buf)
		return n, c.remoteAddr, nil
	}
}

// WriteTo queues a copy of p for the current (or next) carrier; addr is
// ignored in favour of the fixed remote address. It never blocks: when the
// send queue is full the packet is dropped, counted, and WriteTo still
// returns len(p), nil. Once the conn has ended it returns the error ReadFrom
// would.
func (c *RedialPacketConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, c.opError("write", c.err)
	default:
	}
	var buf []byte
	if len(p) <= RedialBufferSize {
		buf = c.pool.get()[:len(p)]
	} else {
		buf = make([]byte, len(p))
	}
	copy(buf, p)
	select {
	case c.sendQueue <- buf:
	default:
		c.sendDropped.Add(1)
		c.pool.put(buf)
	}
	return len(p), nil
}

// closeWithError ends the conn with err, once.
func (c *RedialPacketConn) closeWithError(err error) {
	c.closeOnce.Do(func() {
		c.err = err
		close(c.closed)
		c.cancel()
		c.readDeadline.Set(time.Time{}) // stops its timer
	})
}

// Close ends the conn: it cancels a dial in progress, closes the current
// carrier, makes ReadFrom and WriteTo fail with an error matching
// net.ErrClosed (unless a dial error ended the conn first) and waits for
// every goroutine. Close is idempotent and returns nil.
func (c *RedialPacketConn) Close() error {
	c.closeWithError(net.ErrClosed)
	c.wg.Wait()
	return nil
}

// Stats returns the current counters.
func (c *RedialPacketConn) Stats() RedialStats {
	return RedialStats{
		RecvDropped: c.recvDropped.Load(),
		SendDropped: c.sendDropped.Load(),
		Dials:       c.dials.Load(),
	}
}

// LocalAddr returns the local address given to NewRedialPacketConn.
func (c *RedialPacketConn) LocalAddr() net.Addr { return c.localAddr }

// RemoteAddr returns the remote address given to NewRedialPacketConn.
func (c *RedialPacketConn) RemoteAddr() net.Addr { return c.remoteAddr }

// SetDeadline sets the read deadline (writes never block).
func (c *RedialPacketConn) SetDeadline(t time.Time) error {
	return c.SetReadDeadline(t)
}

// SetReadDeadline sets the deadline for ReadFrom calls, including blocked
// ones; the zero time means none.
func (c *RedialPacketConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Set(t)
	return nil
}

// SetWriteDeadline does nothing: WriteTo never blocks.
func (c *RedialPacketConn) SetWriteDeadline(time.Time) error { return nil }

func (c *RedialPacketConn) opError(op string, err error) error {
	netName := ""
	if c.localAddr != nil {
		netName = c.localAddr.Network()
	}
	return &net.OpError{Op: op, Net: netName, Source: c.localAddr, Addr: c.remoteAddr, Err: err}
}
