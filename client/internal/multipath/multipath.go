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

// ErrNoReply is the reason the reply watch gives when it drops a carrier:
// packets that the far end answers went out through it and no answer came
// back (see ReplyWatch).
var ErrNoReply = errors.New("no reply to packets sent through this proxy")

// starvedAfter is how many answered-kind packets a carrier may send
// without receiving anything while the other carriers receive at least as
// many, before the reply watch takes it for a black hole. The relay drains
// one queue per client into all of its carriers, so a live carrier gets a
// share of any sustained downstream traffic; at low traffic the count is
// never reached and only the blackout rule applies.
const starvedAfter = 16

// ReplyWatch configures the Conn's dead-carrier detection. A carrier is
// dropped with ErrNoReply when a packet that expects an answer went out
// through it more than the timeout ago and, since then,
//   - nothing at all was received on any carrier (a blackout: with one
//     carrier, the proxy or its path to the relay is dead), or
//   - it received nothing itself while it sent, and the other carriers
//     received, at least starvedAfter packets (a black hole next to
//     working proxies).
//
// The watch sees only packets, so the owner says which packets the far end
// answers. The zero ReplyWatch disables it.
//
// While the owner only receives (a download: KCP then sends only
// acknowledgements, which nothing answers) a carrier that dies is not
// waiting for an answer, so neither rule applies. With Probe set, a carrier
// that received at least probeAfter packets and then nothing for half the
// timeout is sent one probe, which the far end answers: a dead carrier is
// then dropped by the rules above, and a live one that merely fell quiet
// costs one packet each way. An idle session, which receives only a
// keepalive now and then, is probed about once per probeAfter of them.
type ReplyWatch struct {
	// Timeout is how long an answer may take; zero disables the watch.
	Timeout time.Duration
	// ExpectsReply reports whether the far end answers packet p (for
	// KCP: p carries data or a window probe, not only acknowledgements).
	// It is called once per packet sent and must not keep p.
	ExpectsReply func(p []byte) bool
	// Floor, if not nil, is asked at each check; the timeout in force is
	// the larger of Timeout and Floor(), so that a slow path is not taken
	// for a dead one.
	Floor func() time.Duration
	// Probe, if not nil, returns a new packet that the far end answers
	// (for KCP: a window probe), or nil if it cannot make one yet. The
	// Conn sends it through one carrier and does not keep it afterwards.
	// Each carrier that joins once the far end has sent something sends
	// one first (see greet).
	Probe func() []byte
}

// probeAfter is how many packets a carrier must have received since its
// last probe before it is probed again on falling silent.
const probeAfter = 16

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

// StandbyCarrier is a Carrier that can stand by: the Conn tells it when
// it starts and stops standing by, and while it does, sends it a keepalive
// every standbyKeepalive instead of packets.
type StandbyCarrier interface {
	Carrier
	// StandBy is called with true when the carrier starts standing by,
	// and with false when it starts carrying packets again.
	StandBy(standing bool)
	// KeepAlive sends what keeps the carrier's path open (its proxy's and
	// the far end's idle timeouts) without reaching the far end as a
	// packet.
	KeepAlive() error
}

// takeoverPause is how long after a standing-by carrier took over because
// a packet came through it the next may do so: Snowflake's server sends
// through every carrier of a client, and without a pause the roles would
// swap at every packet, each time with a greeting.
const takeoverPause = 5 * time.Second

// standbyKeepalive is how often a standing-by carrier sends a keepalive:
// well within the 30 s after which Snowflake's and Flurry's proxies close
// a DataChannel that carries nothing.
const standbyKeepalive = 10 * time.Second

// Stats counts a Conn's drops and carriers. Counters only grow.
type Stats struct {
	RecvDropped  uint64 // received packets dropped: receive queue full
	SendDropped  uint64 // WriteTo packets dropped: send queue full
	Carriers     uint64 // carriers added
	PacketsSent  uint64 // packets written to carriers
	PacketsRecvd uint64 // packets read from carriers
	Probes       uint64 // probes sent, by the reply watch or greeting a carrier (also in PacketsSent)
	Takeovers    uint64 // standing-by carriers that started carrying packets
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
	wg            sync.WaitGroup // carrier goroutines and the watch

	watch    ReplyWatch
	serving  int          // how many carriers carry packets at once; 0: all (New)
	epoch    time.Time    // origin of the clock readings below
	lastRecv atomic.Int64 // clock reading of the last packet received; 0: none
	reached  atomic.Int64 // clock reading of the last takeover by a packet (takeOver); 0: none

	mu      sync.Mutex // guards members and changed
	members map[*member]struct{}
	changed chan struct{} // closed and replaced when members change

	recvDropped, sendDropped, carriers, sent, recvd, probes, takeovers atomic.Uint64
}

// member is one carrier in the set.
type member struct {
	car        Carrier
	dead       chan struct{} // closed by kill
	killOnce   sync.Once
	readerDone chan struct{}
	removed    chan struct{} // closed once both goroutines have ended

	// Written by the reply watch's hooks in the writer and reader.
	unanswered atomic.Int64  // answered-kind packets sent since m last received
	since      atomic.Int64  // clock reading when the first of them was sent; 0: none
	recvMark   atomic.Uint64 // the Conn's received count at that time

	lastRecv   atomic.Int64  // clock reading of m's last received packet; 0: none
	sinceProbe atomic.Uint64 // packets m received since its last probe
	probe      chan []byte   // a probe for the writer to send (capacity 1)
	greet      bool          // the far end knew the session when m joined, or m joined standing by: see greet

	standby atomic.Bool   // m stands by (see New); changed under the Conn's mu
	role    chan struct{} // wakes the writer when standby changes (capacity 1)
}

// New returns a Conn with no carriers, which drops carriers that stop
// answering as w says.
//
// With serving positive, at most that many carriers carry packets; a
// carrier added beyond them stands by: it sends nothing but a keepalive
// now and then (StandbyCarrier) and is read as any other. A standing-by
// carrier takes over, greeting the far end first (see greet), when a
// carrying one leaves the set, when the owner demotes one (Demote), and
// when a packet arrives through it: Flurry's relay sends through a
// standby only when the carriers in use fell silent. The carrier that has
// received nothing for the longest then stands by in its place. A packet
// takes a standby over at most once per takeoverPause.
func New(local, remote net.Addr, w ReplyWatch, serving int) *Conn {
	c := &Conn{
		local:        local,
		remote:       remote,
		serving:      max(serving, 0),
		recv:         make(chan []byte, QueueSize),
		send:         make(chan []byte, QueueSize),
		readDeadline: deadline.New(),
		closed:       make(chan struct{}),
		members:      make(map[*member]struct{}),
		changed:      make(chan struct{}),
		epoch:        time.Now(),
	}
	if w.Timeout > 0 && w.ExpectsReply != nil {
		c.watch = w
		c.wg.Add(1)
		go c.watchReplies()
	}
	return c
}

// clock returns the time since c.epoch plus one, so that zero can mean
// "none" even where time stands still (testing/synctest).
func (c *Conn) clock() int64 { return int64(time.Since(c.epoch)) + 1 }

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
		probe:      make(chan []byte, 1),
		greet:      c.lastRecv.Load() != 0,
		role:       make(chan struct{}, 1),
	}
	c.mu.Lock()
	select {
	case <-c.closed:
		c.mu.Unlock()
		_ = car.Close()
		return nil, ErrConnClosed
	default:
	}
	if c.serving > 0 && c.servingLocked() >= c.serving {
		m.standby.Store(true)
		m.greet = true // the far end knows the session by the time m takes over
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

// Standing reports whether car is in the set and stands by.
func (c *Conn) Standing(car Carrier) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.memberLocked(car)
	return m != nil && m.standby.Load()
}

// Demote makes car stand by and a standing-by carrier take over from it,
// if car carries packets and another stands by. It reports whether it
// did.
func (c *Conn) Demote(car Carrier) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.memberLocked(car)
	if m == nil || m.standby.Load() {
		return false
	}
	for s := range c.members {
		if s.standby.Load() {
			c.setStandbyLocked(s, false)
			c.setStandbyLocked(m, true)
			return true
		}
	}
	return false
}

// memberLocked returns car's member, nil if car is not in the set; mu is
// held.
func (c *Conn) memberLocked(car Carrier) *member {
	for m := range c.members {
		if m.car == car {
			return m
		}
	}
	return nil
}

// servingLocked counts the carriers that carry packets; mu is held.
func (c *Conn) servingLocked() int {
	n := 0
	for m := range c.members {
		if !m.standby.Load() {
			n++
		}
	}
	return n
}

// setStandbyLocked changes m's role and wakes its writer; mu is held.
func (c *Conn) setStandbyLocked(m *member, standing bool) {
	if m.standby.Swap(standing) == standing {
		return
	}
	if !standing {
		c.takeovers.Add(1)
	}
	select {
	case m.role <- struct{}{}:
	default:
	}
}

// takeOver makes the standing-by m carry packets, because a packet came
// through it, and the carrier that has received nothing for the longest
// stand by if more than serving now carry.
func (c *Conn) takeOver(m *member) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.members[m]; !ok || !m.standby.Load() {
		return
	}
	c.reached.Store(c.clock())
	c.setStandbyLocked(m, false)
	if c.servingLocked() <= c.serving {
		return
	}
	var oldest *member
	for o := range c.members {
		if o != m && !o.standby.Load() && (oldest == nil || o.lastRecv.Load() < oldest.lastRecv.Load()) {
			oldest = o
		}
	}
	if oldest != nil {
		c.setStandbyLocked(oldest, true)
	}
}

// promoteLocked makes a standing-by carrier carry packets if fewer than
// serving do; mu is held.
func (c *Conn) promoteLocked() {
	if c.serving == 0 || c.servingLocked() >= c.serving {
		return
	}
	for m := range c.members {
		if m.standby.Load() {
			c.setStandbyLocked(m, false)
			return
		}
	}
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

// reasonCloser is a Carrier that can be told why the Conn drops it.
type reasonCloser interface {
	// CloseWithReason is Close, with the reason the Conn dropped it.
	CloseWithReason(reason error) error
}

// kill marks m dead and closes its carrier, once.
func (m *member) kill() { m.killFor(nil) }

// killFor is kill, telling a reasonCloser carrier why when reason is set.
func (m *member) killFor(reason error) {
	m.killOnce.Do(func() {
		close(m.dead)
		if rc, ok := m.car.(reasonCloser); ok && reason != nil {
			_ = rc.CloseWithReason(reason)
			return
		}
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
		if c.watch.Timeout > 0 || c.serving > 0 {
			now := c.clock()
			c.lastRecv.Store(now)
			m.lastRecv.Store(now)
			m.sinceProbe.Add(1)
			if m.since.Load() != 0 {
				m.since.Store(0)
				m.unanswered.Store(0)
			}
		}
		if m.standby.Load() {
			if last := c.reached.Load(); last == 0 || c.clock()-last > int64(takeoverPause) {
				c.takeOver(m)
			}
		}
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
		c.promoteLocked()
		c.notifyLocked()
		c.mu.Unlock()
		close(m.removed)
	}()
	standing := false // what the carrier was last told (StandBy)
	if !m.standby.Load() && m.greet && !c.greet(m) {
		return
	}
	carDone := m.car.Done()
	var batch [][]byte // reused by writeQueued
	for {
		if m.standby.Load() {
			if !c.standBy(m, &standing) {
				return
			}
			if m.greet && !c.greet(m) {
				return
			}
			continue
		}
		select {
		case <-c.closed:
			return
		case <-m.dead:
			return
		case <-carDone:
			return
		case <-m.role:
		case p := <-c.send:
			var err error
			batch, err = c.writeQueued(m, p, batch)
			if err != nil {
				return
			}
		case p := <-m.probe: // not from the pool
			if err := m.car.WritePacket(p); err != nil {
				return
			}
			c.sent.Add(1)
			c.probes.Add(1)
			c.sentExpectingReply(m)
		}
	}
}

// standBy runs while m stands by: it sends keepalives until m is told to
// carry packets, and reports false if m's carrier failed or the Conn
// closed. standing is what the carrier was last told.
func (c *Conn) standBy(m *member, standing *bool) bool {
	sc, _ := m.car.(StandbyCarrier)
	tell := func(s bool) {
		if sc != nil && *standing != s {
			sc.StandBy(s)
		}
		*standing = s
	}
	tell(true)
	keepalive := time.NewTicker(standbyKeepalive)
	defer keepalive.Stop()
	carDone := m.car.Done()
	for m.standby.Load() {
		select {
		case <-c.closed:
			return false
		case <-m.dead:
			return false
		case <-carDone:
			return false
		case <-m.role:
		case <-keepalive.C:
			if sc != nil && sc.KeepAlive() != nil {
				return false
			}
		}
	}
	tell(false)
	return true
}

// greet sends a probe through m before anything else when the far end
// already knows the session (something came from it): a carrier that
// joins replaces, or adds to, carriers the far end has been using, and a
// KCP window probe carries the session's latest acknowledgement (una).
// When the carrier that died had delivered data whose acknowledgements
// went down with it, the relay learns from this first packet to drop
// those segments from what it resends, instead of sending them all again
// through the new proxy (a round trip's worth of data, which a new
// proxy's first rate takes two or three round trips to pass) before
// what is missing; kcp-go then sends the rest at once. The first carrier
// of a session gets none: the relay opens a session only on its first
// data packet. greet reports false if m's carrier failed.
func (c *Conn) greet(m *member) bool {
	if c.watch.Probe == nil {
		return true
	}
	p := c.watch.Probe()
	if p == nil {
		return true
	}
	if err := m.car.WritePacket(p); err != nil {
		return false
	}
	c.sent.Add(1)
	c.probes.Add(1)
	c.sentExpectingReply(m)
	return true
}

// sentExpectingReply notes that m sent a packet the far end answers.
func (c *Conn) sentExpectingReply(m *member) {
	m.unanswered.Add(1)
	if m.since.Load() == 0 {
		m.recvMark.Store(c.recvd.Load())
		m.since.Store(c.clock())
	}
}

// watchReplies drops the carriers that ReplyWatch takes for dead, checking
// four times per timeout, until the Conn is closed.
func (c *Conn) watchReplies() {
	defer c.wg.Done()
	tick := time.NewTicker(max(c.watch.Timeout/4, 10*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-c.closed:
			return
		case <-tick.C:
		}
		timeout := c.watch.Timeout
		if c.watch.Floor != nil {
			timeout = max(timeout, c.watch.Floor())
		}
		c.mu.Lock()
		var silent []*member
		for m := range c.members {
			if c.unansweredFor(m, timeout) {
				silent = append(silent, m)
			} else if c.watch.Probe != nil && !m.standby.Load() && c.fellSilent(m, timeout) {
				c.sendProbe(m)
			}
		}
		c.mu.Unlock()
		for _, m := range silent {
			m.killFor(ErrNoReply)
		}
	}
}

// fellSilent reports whether m should be probed: it awaits no answer, it
// received probeAfter packets since its last probe, and then nothing for
// half of timeout.
func (c *Conn) fellSilent(m *member, timeout time.Duration) bool {
	last := m.lastRecv.Load()
	return m.since.Load() == 0 && last != 0 && m.sinceProbe.Load() >= probeAfter &&
		c.clock()-last > int64(timeout/2)
}

// sendProbe hands m's writer a probe, if the owner can make one.
func (c *Conn) sendProbe(m *member) {
	p := c.watch.Probe()
	if p == nil {
		return
	}
	select {
	case m.probe <- p:
		m.sinceProbe.Store(0)
	default: // the last one is still waiting for the writer
	}
}

// unansweredFor reports whether m has waited for an answer longer than
// timeout, by ReplyWatch's two rules.
func (c *Conn) unansweredFor(m *member, timeout time.Duration) bool {
	since := m.since.Load()
	if since == 0 || c.clock()-since <= int64(timeout) {
		return false
	}
	if c.lastRecv.Load() < since {
		return true // blackout: nothing came back on any carrier
	}
	return m.unanswered.Load() >= starvedAfter && c.recvd.Load()-m.recvMark.Load() >= starvedAfter
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
		Probes:       c.probes.Load(),
		Takeovers:    c.takeovers.Load(),
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
