package turbotunnel

import (
	"net"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/transport/v5/deadline"
)

const (
	// QueueSize is the capacity of every turbotunnel queue, in packets
	// (Snowflake's value).
	QueueSize = 512

	// OutgoingQueueSize is the capacity of each client's outgoing queue,
	// in packets: four times Snowflake's. A client's smux announces more
	// window each time it has read half of ClientStreamBuffer (1.5 MiB,
	// 1 143 full KCP packets), and the relay's KCP sends that much at
	// once; a queue smaller than the burst overflowed whenever the proxy
	// took it slower than it came, thousands of drops per download on a
	// 150 ms path, each one a KCP retransmission timeout. 48 KiB per
	// client's queue.
	OutgoingQueueSize = 2048

	// DefaultClientTimeout is how long a QueuePacketConn keeps an idle
	// client's outgoing queue when given timeout <= 0 (Snowflake's
	// clientMapTimeout).
	DefaultClientTimeout = time.Minute

	// minExpiryInterval bounds how often the expiry goroutine runs, for
	// very small timeouts.
	minExpiryInterval = time.Millisecond
)

// QueueStats counts what a QueuePacketConn dropped and expired. Counters
// only grow.
type QueueStats struct {
	// IncomingDropped counts QueueIncoming packets dropped because the
	// incoming queue was full, the conn was closed or addr was nil.
	IncomingDropped uint64
	// OutgoingDropped counts WriteTo packets dropped because the client's
	// outgoing queue was full.
	OutgoingDropped uint64
	// Truncated counts packets longer than the MTU, cut to the MTU.
	Truncated uint64
	// Expired counts outgoing queues closed because their client was idle.
	Expired uint64
	// Clients is the current number of outgoing queues.
	Clients int
}

// taggedPacket is a packet in the incoming queue with its client.
type taggedPacket struct {
	p    []byte
	addr net.Addr
}

// clientQueue is the outgoing queue of one client.
type clientQueue struct {
	queue    chan []byte
	lastSeen atomic.Int64 // nanoseconds since QueuePacketConn.epoch
}

// QueuePacketConn is the net.PacketConn under one server-side KCP instance.
// Its ReadFrom returns the packets given to QueueIncoming, from every client;
// its WriteTo queues a copy of each packet for the client it is addressed to,
// to be taken from OutgoingQueue. Clients are identified by their net.Addr
// (normally a ClientID.Addr, or a ClientID).
//
// The incoming queue holds at most QueueSize packets and each outgoing
// queue OutgoingQueueSize; a full queue drops the packet
// and counts it in Stats. Packets longer than the MTU are truncated. A
// client's outgoing queue is created on first use and closed once neither
// WriteTo nor OutgoingQueue has used it for the timeout (checked every
// timeout/2, so it goes after between 1 and 1.5 timeouts).
//
// All methods are safe for concurrent use. Writes never block, so
// SetWriteDeadline has no effect.
type QueuePacketConn struct {
	localAddr    net.Addr
	mtu          int
	timeout      time.Duration
	epoch        time.Time
	pool         *bufferPool
	incoming     chan taggedPacket
	closedQueue  chan []byte // closed at creation, handed out after Close
	closed       chan struct{}
	closeOnce    sync.Once
	wg           sync.WaitGroup // the expiry goroutine
	readDeadline *deadline.Deadline

	mu      sync.RWMutex
	clients map[net.Addr]*clientQueue // guarded by mu; nil after Close
	shut    bool                      // guarded by mu; set by Close

	incomingDropped atomic.Uint64
	outgoingDropped atomic.Uint64
	truncated       atomic.Uint64
	expired         atomic.Uint64
}

// NewQueuePacketConn returns a QueuePacketConn with the given local address
// (returned by LocalAddr), idle-client timeout (DefaultClientTimeout when
// <= 0) and MTU (MTU when <= 0). It starts one goroutine, which Close
// stops.
func NewQueuePacketConn(localAddr net.Addr, timeout time.Duration, mtu int) *QueuePacketConn {
	if timeout <= 0 {
		timeout = DefaultClientTimeout
	}
	if mtu <= 0 {
		mtu = MTU
	}
	c := &QueuePacketConn{
		localAddr:    localAddr,
		mtu:          mtu,
		timeout:      timeout,
		epoch:        time.Now(),
		pool:         newBufferPool(mtu),
		incoming:     make(chan taggedPacket, QueueSize),
		closedQueue:  make(chan []byte),
		closed:       make(chan struct{}),
		readDeadline: deadline.New(),
		clients:      make(map[net.Addr]*clientQueue),
	}
	close(c.closedQueue)
	c.wg.Add(1)
	go c.expireLoop()
	return c
}

// now returns the monotonic time since c.epoch.
func (c *QueuePacketConn) now() int64 {
	return int64(time.Since(c.epoch))
}

// QueueIncoming queues a copy of p, truncated to the MTU, to be returned by
// ReadFrom with addr as its source. It never blocks: when the incoming queue
// is full, or the conn is closed, or addr is nil, the packet is dropped and
// counted. p may be reused as soon as QueueIncoming returns.
func (c *QueuePacketConn) QueueIncoming(p []byte, addr net.Addr) {
	if addr == nil {
		c.incomingDropped.Add(1)
		return
	}
	select {
	case <-c.closed:
		c.incomingDropped.Add(1)
		return
	default:
	}
	buf := c.pool.get()
	n := copy(buf, p)
	if n < len(p) {
		c.truncated.Add(1)
	}
	select {
	case c.incoming <- taggedPacket{p: buf[:n], addr: addr}:
	default:
		c.incomingDropped.Add(1)
		c.pool.put(buf)
	}
}

// ReadFrom returns the next packet queued by QueueIncoming and its client
// address. A packet longer than p is truncated to len(p). It blocks until a
// packet arrives, the read deadline passes (an error whose Timeout() is true)
// or the conn is closed (an error matching net.ErrClosed).
func (c *QueuePacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	timedOut := c.readDeadline.Done()
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", nil, net.ErrClosed)
	case <-timedOut:
		return 0, nil, c.opError("read", nil, os.ErrDeadlineExceeded)
	default:
	}
	select {
	case <-c.closed:
		return 0, nil, c.opError("read", nil, net.ErrClosed)
	case <-timedOut:
		return 0, nil, c.opError("read", nil, os.ErrDeadlineExceeded)
	case pkt := <-c.incoming:
		n := copy(p, pkt.p)
		c.pool.put(pkt.p)
		return n, pkt.addr, nil
	}
}

// WriteTo queues a copy of p, truncated to the MTU, on the outgoing queue of
// addr, creating the queue if needed. p may be reused as soon as WriteTo
// returns (kcp-go does). It never blocks: when the queue is full the packet
// is dropped and counted, and WriteTo still reports success, as a lossy
// network would. It returns len(p), or an error matching net.ErrClosed
// after Close, or ErrUnsupportedAddr for an address that cannot be a map
// key.
func (c *QueuePacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	if !usableAddr(addr) {
		return 0, c.opError("write", addr, ErrUnsupportedAddr)
	}
	buf := c.pool.get()
	n := copy(buf, p)
	if n < len(p) {
		c.truncated.Add(1)
	}
	buf = buf[:n]
	now := c.now()

	// The send happens under the lock (shared for an existing queue),
	// and expiry closes queues under the exclusive lock, so a queue is
	// never closed under a sender.
	c.mu.RLock()
	q := c.clients[addr]
	if q != nil {
		q.lastSeen.Store(now)
		c.offer(q, buf)
		c.mu.RUnlock()
		return len(p), nil
	}
	c.mu.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		c.pool.put(buf)
		return 0, c.opError("write", addr, net.ErrClosed)
	}
	q = c.queueLocked(addr, now)
	c.offer(q, buf)
	return len(p), nil
}

// offer puts buf on q without blocking, or drops it. c.mu must be held
// (shared is enough).
func (c *QueuePacketConn) offer(q *clientQueue, buf []byte) {
	select {
	case q.queue <- buf:
	default:
		c.outgoingDropped.Add(1)
		c.pool.put(buf)
	}
}

// queueLocked returns the queue of addr, creating it. c.mu must be held
// exclusively and c.shut be false.
func (c *QueuePacketConn) queueLocked(addr net.Addr, now int64) *clientQueue {
	q := c.clients[addr]
	if q == nil {
		q = &clientQueue{queue: make(chan []byte, OutgoingQueueSize)}
		c.clients[addr] = q
	}
	q.lastSeen.Store(now)
	return q
}

// OutgoingQueue returns the outgoing queue of addr, creating it if needed,
// and marks the client as active. Receive packets from it, write them to the
// client, then give each back with Restore.
//
// The channel is closed when the client expires or the conn is closed;
// packets already queued can still be received. A consumer that runs for
// long should call OutgoingQueue again for each packet (as Snowflake's relay
// does), which keeps the client active while it is being served, and end
// when the channel it holds is closed.
//
// When a queue expires, packets still in it reach only consumers that still
// hold the old channel; a consumer that calls OutgoingQueue again gets a new
// queue. Either way KCP retransmits what is lost.
//
// Several consumers may receive from the same queue concurrently: each
// packet goes to exactly one of them. The relay uses this to spread a
// client's packets over all the carriers that client has open.
//
// After Close, and for an address WriteTo would reject, OutgoingQueue
// returns a closed channel.
func (c *QueuePacketConn) OutgoingQueue(addr net.Addr) <-chan []byte {
	if !usableAddr(addr) {
		return c.closedQueue
	}
	now := c.now()
	c.mu.RLock()
	q := c.clients[addr]
	if q != nil {
		q.lastSeen.Store(now)
		c.mu.RUnlock()
		return q.queue
	}
	c.mu.RUnlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.shut {
		return c.closedQueue
	}
	return c.queueLocked(addr, now).queue
}

// Restore gives a packet buffer received from an OutgoingQueue back to the
// pool for reuse. Call it once per packet, after the packet has been written,
// and do not use p afterwards. Slices whose capacity is smaller than the MTU
// or more than twice it are ignored, so restoring a foreign slice is
// harmless.
func (c *QueuePacketConn) Restore(p []byte) {
	c.pool.put(p)
}

// Stats returns the current counters.
func (c *QueuePacketConn) Stats() QueueStats {
	c.mu.RLock()
	clients := len(c.clients)
	c.mu.RUnlock()
	return QueueStats{
		IncomingDropped: c.incomingDropped.Load(),
		OutgoingDropped: c.outgoingDropped.Load(),
		Truncated:       c.truncated.Load(),
		Expired:         c.expired.Load(),
		Clients:         clients,
	}
}

// MTU returns the MTU packets are truncated to.
func (c *QueuePacketConn) MTU() int { return c.mtu }

// expireLoop closes idle clients' queues every timeout/2 until Close.
func (c *QueuePacketConn) expireLoop() {
	defer c.wg.Done()
	ticker := time.NewTicker(max(c.timeout/2, minExpiryInterval))
	defer ticker.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-ticker.C:
			c.expire()
		}
	}
}

// Forget closes and forgets addr's outgoing queue at once, giving the
// packets still in it back to the pool, as if it had expired: for a client
// the caller knows is gone (its session ended and no carrier serves it), so
// that the queue does not wait out the timeout.
func (c *QueuePacketConn) Forget(addr net.Addr) {
	if !usableAddr(addr) {
		return
	}
	c.mu.Lock()
	q := c.clients[addr]
	if q == nil {
		c.mu.Unlock()
		return
	}
	delete(c.clients, addr)
	close(q.queue)
	c.mu.Unlock()
	// No sender holds a closed queue (senders hold c.mu), and a consumer
	// that still holds the channel may race us for the packets; either
	// way each goes back to the pool once.
	for p := range q.queue {
		c.pool.put(p)
	}
}

// Drain gives the packets waiting in addr's outgoing queue back to the
// pool and returns how many there were; the queue stays. For a client
// whose packets the caller is about to send again (a KCP session that
// retransmits everything in flight): the copies then do not wait behind
// the stale ones.
func (c *QueuePacketConn) Drain(addr net.Addr) int {
	if !usableAddr(addr) {
		return 0
	}
	// The read lock keeps Forget and expire from closing the queue meanwhile.
	c.mu.RLock()
	defer c.mu.RUnlock()
	q := c.clients[addr]
	if q == nil {
		return 0
	}
	n := 0
	for {
		select {
		case p := <-q.queue:
			c.pool.put(p)
			n++
		default:
			return n
		}
	}
}

// expire closes and forgets the queues idle for at least the timeout.
func (c *QueuePacketConn) expire() {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for addr, q := range c.clients {
		if time.Duration(now-q.lastSeen.Load()) >= c.timeout {
			delete(c.clients, addr)
			close(q.queue)
			c.expired.Add(1)
		}
	}
}

// Close closes the conn: blocked and future ReadFrom calls return an error
// matching net.ErrClosed, every outgoing queue is closed, WriteTo fails and
// QueueIncoming drops. It stops the expiry goroutine and waits for it. Close
// is idempotent and always returns nil.
func (c *QueuePacketConn) Close() error {
	c.closeOnce.Do(func() {
		close(c.closed)
		c.readDeadline.Set(time.Time{}) // stops its timer
		c.mu.Lock()
		c.shut = true
		for _, q := range c.clients {
			close(q.queue)
		}
		c.clients = nil
		c.mu.Unlock()
	})
	c.wg.Wait()
	return nil
}

// LocalAddr returns the address given to NewQueuePacketConn.
func (c *QueuePacketConn) LocalAddr() net.Addr { return c.localAddr }

// SetDeadline sets the read deadline (writes never block).
func (c *QueuePacketConn) SetDeadline(t time.Time) error {
	return c.SetReadDeadline(t)
}

// SetReadDeadline sets the deadline for ReadFrom calls, including blocked
// ones; the zero time means none.
func (c *QueuePacketConn) SetReadDeadline(t time.Time) error {
	c.readDeadline.Set(t)
	return nil
}

// SetWriteDeadline does nothing: WriteTo never blocks.
func (c *QueuePacketConn) SetWriteDeadline(time.Time) error { return nil }

func (c *QueuePacketConn) opError(op string, addr net.Addr, err error) error {
	netName := ""
	if c.localAddr != nil {
		netName = c.localAddr.Network()
	}
	return &net.OpError{Op: op, Net: netName, Source: c.localAddr, Addr: addr, Err: err}
}

// usableAddr reports whether addr can key the client map: not nil and of a
// comparable dynamic value (hashing anything else would panic).
func usableAddr(addr net.Addr) bool {
	switch addr.(type) {
	case nil:
		return false
	case ClientID, clientAddr:
		// The relay's addresses, checked without reflect (whose
		// Comparable allocates for some types).
		return true
	}
	return reflect.ValueOf(addr).Comparable()
}
