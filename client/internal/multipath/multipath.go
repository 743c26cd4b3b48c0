package multipath

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5/deadline"
)

// QueueSize is the capacity of the send and receive queues, in packets
// (Snowflake's turbotunnel queue size).
const QueueSize = 512

// BufferSize is the size of the packet buffers: the longest packet a
// carrier delivers or WriteTo accepts without truncation (Snowflake's
// 1500-byte read buffer; KCP packets are at most 1400 bytes).
const BufferSize = 1500

// ErrConnClosed is the error ReadFrom, WriteTo and Add return after Close;
// it matches net.ErrClosed.
var ErrConnClosed = net.ErrClosed

// Carrier carries whole packets to and from the relay.
type Carrier interface {
	// ReadPacket reads the next packet into p (truncating it to len(p)).
	ReadPacket(p []byte) (int, error)
	// WritePacket sends p; it may block while the carrier is busy.
	WritePacket(p []byte) error
	// Done is closed when the carrier dies by itself.
	Done() <-chan struct{}
	// Close closes the carrier; blocked ReadPacket and WritePacket calls
	// must then return.
	Close() error
}

// Stats counts a Conn's drops and carriers. Counters only grow.
type Stats struct {
	RecvDropped  uint64 // received packets dropped: receive queue full
	SendDropped  uint64 // WriteTo packets dropped: send queue full
	Carriers     uint64 // carriers added
	PacketsSent  uint64 // packets written to carriers
	PacketsRecvd uint64 // packets read from carriers
}

// Conn is a net.PacketConn over a changing set of carriers. Its addresses
// are fixed. All methods are safe for concurrent use.
type Conn struct {
	local, remote net.Addr
	bufs          sync.Pool // of *[]byte holding a BufferSize buffer
	boxes         sync.Pool // of empty *[]byte, so putBuf allocates nothing
	recv          chan []byte
	send          chan []byte
	readDeadline  *deadline.Deadline
	closed        chan struct{}
	closeOnce     sync.Once
	wg            sync.WaitGroup // carrier goroutines

	mu      sync.Mutex // guards members and changed
	members map[*member]struct{}
	changed chan struct{} // closed and replaced when members change

	recvDropped, sendDropped, carriers, sent, recvd atomic.Uint64
}

// member is one carrier in the set.
type member struct {
	car        Carrier
	dead       chan struct{} // closed by kill
	killOnce   sync.Once
	readerDone chan struct{}
	removed    chan struct{} // closed once both goroutines have ended
}

// New returns a Conn with no carriers.
func New(local, remote net.Addr) *Conn {
	return &Conn{
		local:        local,
		remote:       remote,
		recv:         make(chan []byte, QueueSize),
		send:         make(chan []byte, QueueSize),
		readDeadline: deadline.New(),
		closed:       make(chan struct{}),
		members:      make(map[*member]struct{}),
		changed:      make(chan struct{}),
	}
}

func (c *Conn) getBuf() []byte {
	if box, ok := c.bufs.Get().(*[]byte); ok {
		b := *box
		*box = nil
		c.boxes.Put(box)
		return b[:BufferSize]
	}
	return make([]byte, BufferSize)
}

func (c *Conn) putBuf(b []byte) {
	if cap(b) != BufferSize {
		return
	}
	box, ok := c.boxes.Get().(*[]byte)
	if !ok {
		box = new([]byte)
	}
	*box = b[:BufferSize]
	c.bufs.Put(box)
}

// Add puts car into the set and starts its reader and writer. The returned
// channel is closed when the carrier has left the set (it died, or the Conn
// was closed) and its goroutines have ended; the carrier is closed by then.
// After Close, Add closes car and returns ErrConnClosed.
func (c *Conn) Add(car Carrier) (<-chan struct{}, error) {
	m := &member{
		car:        car,
		dead:       make(chan struct{}),
		readerDone: make(chan struct{}),
		removed:    make(chan struct{}),
	}
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		_ = car.Close()
		return nil, ErrConnClosed
	default:
	}
	c.members[m] = struct{}{}
	c.notifyLocked()
	c.wg.Add(2)
	c.mu.Unlock()
	c.carriers.Add(1)
	go c.reader(m)
	go c.writer(m)
	return m.removed, nil
}

// Len returns the number of carriers in the set.
func (c *Conn) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.members)
}

// Closed returns a channel that is closed when Close starts.
func (c *Conn) Closed() <-chan struct{} { return c.closed }

// Changed returns a channel that is closed the next time a carrier joins
// or leaves the set.
func (c *Conn) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

func (c *Conn) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// kill marks m dead and closes its carrier, once.
func (m *member) kill() {
	m.killOnce.Do(func() {
		close(m.dead)
		_ = m.car.Close()
	})
}

// reader moves packets from m's carrier to the receive queue.
func (c *Conn) reader(m *member) {
	defer c.wg.Done()
	defer close(m.readerDone)
	defer m.kill()
	for {
		buf := c.getBuf()
		n, err := m.car.ReadPacket(buf)
		if err != nil {
			c.putBuf(buf)
			return
		}
		c.recvd.Add(1)
		select {
		case c.recv <- buf[:n]:
		default:
			c.recvDropped.Add(1)
			c.putBuf(buf)
		}
	}
}

// writer moves packets from the send queue to m's carrier; when m dies it
// waits for the reader and takes m out of the set.
func (c *Conn) writer(m *member) {
	defer c.wg.Done()
	defer func() {
		m.kill()
		<-m.readerDone
		c.mu.Lock()
		delete(c.members, m)
		c.notifyLocked()
		c.mu.Unlock()
		close(m.removed)
	}()
	carDone := m.car.Done()
	for {
		select {
		case <-c.closed:
			return
		case <-m.dead:
			return
		case <-carDone:
			return
		case p := <-c.send:
			err := m.car.WritePacket(p)
			c.putBuf(p)
			if err != nil {
				return
			}
			c.sent.Add(1)
		}
	}
}

// ReadFrom returns the next packet received on any carrier, truncated to
// len(p), with the fixed remote address.
func (c *Conn) ReadFrom(p []byte) (int, net.Addr, error) {
	dl := c.readDeadline.Done()
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", ErrConnClosed)
	case <-dl:
		return 0, nil, c.opError("read", os.ErrDeadlineExceeded)
	default:
	}
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", ErrConnClosed)
	case <-dl:
		return 0, nil, c.opError("read", os.ErrDeadlineExceeded)
	case buf := <-c.recv:
		n := copy(p, buf)
		c.putBuf(buf)
		return n, c.remote, nil
	}
}

// WriteTo queues a copy of p (truncated to BufferSize) for the next ready
// carrier; addr is ignored. It never blocks: with the send queue full the
// packet is dropped and counted, and WriteTo still succeeds.
func (c *Conn) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case <-c.closed:
		return 0, c.opError("write", ErrConnClosed)
	default:
	}
	buf := c.getBuf()
	n := copy(buf, p)
	select {
	case c.send <- buf[:n]:
	default:
		c.sendDropped.Add(1)
		c.putBuf(buf)
	}
	return len(p), nil
}

// Close closes every carrier, makes ReadFrom and WriteTo fail and waits for
// the carrier goroutines. It is idempotent.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		close(c.closed)
		members := make([]*member, 0, len(c.members))
		for m := range c.members {
			members = append(members, m)
		}
		c.mu.Unlock()
		c.readDeadline.Set(time.Time{}) // stops its timer
		for _, m := range members {
			m.kill()
		}
	})
	c.wg.Wait()
	return nil
}

// Stats returns the current counters.
func (c *Conn) Stats() Stats {
	return Stats{
		RecvDropped:  c.recvDropped.Load(),
		SendDropped:  c.sendDropped.Load(),
		Carriers:     c.carriers.Load(),
		PacketsSent:  c.sent.Load(),
		PacketsRecvd: c.recvd.Load(),
	}
}

// LocalAddr returns the local address given to New.
func (c *Conn) LocalAddr() net.Addr { return c.local }

// SetDeadline sets the read deadline; writes never block.
func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

// SetReadDeadline sets the deadline of ReadFrom calls, blocked ones
// included; the zero time means none.
func (c *Conn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Set(t)
	return nil
}

// SetWriteDeadline does nothing: WriteTo never blocks.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: "multipath", Source: c.local, Addr: c.remote, Err: err}
}

// IsClosed reports whether err comes from a closed Conn.
func IsClosed(err error) bool { return errors.Is(err, net.ErrClosed) }
