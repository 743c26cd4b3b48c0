package relay

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/relay/internal/idlepoll"
	"github.com/flurrypt/flurry/relay/internal/wsserver"
)

const (
	// maxPacketSize is the largest KCP packet a carrier accepts; longer
	// ones are truncated, as in Snowflake (KCP's MTU is 1400).
	maxPacketSize = turbotunnel.MTU
	// maxMessageSize bounds a WebSocket message built from a batch of
	// outgoing packets: one that goes out in a single write.
	maxMessageSize = wsserver.MaxSingleWrite
	// carrierUnsentLimit bounds the bytes a carrier's socket holds not yet
	// sent, where the kernel allows it (limitUnsent): a few dozen
	// messages, enough to keep a fast link busy between two wakeups of the
	// writer.
	carrierUnsentLimit = 32 << 10
	// carrierWriteTimeout closes a carrier whose peer does not take a
	// message for this long.
	carrierWriteTimeout = 30 * time.Second
	// parkAfter is how long a carrier's reader waits for the next chunk
	// before it gives its goroutine and read buffer up and parks the
	// carrier in the relay's poller. Busy carriers rarely wait that long;
	// an idle one wakes up for each message it receives (Snowflake clients
	// send smux keepalives every 10 s), and holds a goroutine and a buffer
	// for this long each time.
	parkAfter = 200 * time.Millisecond
)

// clock is a moment as the time since the relay's epoch: a third of a
// time.Time's size (a carrier keeps two), and monotonic.
type clock int64

func (r *Relay) now() clock { return clock(time.Since(r.epoch)) }

func (r *Relay) timeAt(t clock) time.Time { return r.epoch.Add(time.Duration(t)) }

// errParked ends a carrier's read loop when the carrier parked: another
// goroutine resumes it.
var errParked = errors.New("carrier parked")

// bufferPools are the relay's pooled buffers.
type bufferPools struct {
	// packets holds *[]byte buffers of maxPacketSize for reading packets.
	// A carrier takes one only while a packet is arriving: an idle carrier
	// holds none.
	packets sync.Pool
	// messages holds *[]byte buffers of wsserver.HeadRoom+maxMessageSize
	// for building outgoing messages; a carrier takes one only while it
	// has packets to send.
	messages sync.Pool
	// copies holds *[]byte buffers of copyBufferSize for reading from
	// targets.
	copies sync.Pool
	// requests holds *bufio.Reader for reading upgrade requests.
	requests sync.Pool
}

func newBufferPools() *bufferPools {
	p := &bufferPools{}
	p.packets.New = func() any {
		b := make([]byte, maxPacketSize+tunnelseal.Overhead)
		return &b
	}
	p.messages.New = func() any {
		b := make([]byte, 0, wsserver.HeadRoom+maxMessageSize)
		return &b
	}
	p.copies.New = func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}
	p.requests.New = func() any { return bufio.NewReader(nil) }
	return p
}

// A carrier is one WebSocket connection from a proxy: it carries KCP
// packets of one ClientID's session, framed by the encapsulation format:
//
//	client -> relay:  token (8 bytes) | ClientID (8 bytes) | chunk | chunk | ...
//	relay -> client:  chunk | chunk | ...
//
// where each chunk is an encapsulation data chunk (one KCP packet) or
// padding (skipped). Message boundaries do not matter.
//
// Goroutines: a reader runs from the end of the upgrade to the end of the
// connection, except while the carrier is parked: when nothing has come for
// parkAfter (or nothing is waiting right after the handshake, see
// readFirst), the reader hands the carrier to the relay's poller and ends,
// and a new reader starts when the connection is readable again (or its
// idle deadline passes, or it is closed). A parked carrier holds no
// goroutine and no buffer. The writer starts when the carrier has
// something to send (its ClientID has a session, or it has delivered a
// packet) and is joined by the reader that ends the carrier.
type carrier struct {
	r     *Relay
	conn  *wsserver.Conn
	addr  netip.Addr       // client_ip from the URL, zero if unknown
	peer  netip.Addr       // the proxy's budget key (see admission.go)
	ended func()           // called once the carrier has ended, if set
	park  *idlepoll.Handle // nil: the carrier never parks
	seal  *carrierSeal     // nil: a Snowflake carrier, packets in clear (seal.go)

	sealJoin uint64 // a sealed carrier's join number

	// Owned by the reader (one at a time; the poller hands the carrier
	// from one to the next).
	hdr           [turbotunnel.TokenLen + 8]byte
	first         [1]byte
	pr            prefixedReader
	id            turbotunnel.ClientID
	idAddr        net.Addr // id.Addr(), made once: passing it and its String allocate nothing
	shard         *shard
	client        *clientState // the ClientID's state, attached while the carrier runs
	resendNum     uint8        // the carrier's number in client.resend, set with client
	writerStarted bool
	peerCounted   bool          // admitPeer counted the carrier under peer; else Serve did, at accept
	stopWriter    chan struct{} // closed by the reader when it ends
	writerDone    chan struct{} // closed by the writer
	active        clock         // when a chunk last arrived (coarsely: see refreshActive)
	deadline      clock         // the read deadline set on conn; 0: none set yet
	unparkable    bool          // the poller refused the carrier: wait here
	opened        bool          // it has waited for a chunk once (see readFirst)

	// Shared by the reader and the writer (standby.go).
	delivered atomic.Int64  // clock of the last packet delivered, coarsely; 0: none
	standing  atomic.Bool   // the writer waits in standBy
	wake      chan struct{} // wakes it (capacity 1); made with the writer
	nudged    clock         // owned by the writer: see standsBy
}

func newCarrier(r *Relay, conn *wsserver.Conn, addr netip.Addr) *carrier {
	return &carrier{r: r, conn: conn, addr: addr}
}

// serve runs the carrier from the end of the upgrade: the handshake, then
// the read loop. It returns when the carrier has ended or parked.
func (c *carrier) serve() {
	if !c.handshake() {
		c.conn.Close()
		c.conn.Release()
		c.end()
		return
	}
	if c.r.poller != nil {
		// Before the writer starts: it reads c.park.
		if rc, err := c.conn.SyscallConn(); err == nil {
			c.park = idlepoll.NewHandle(rc)
		}
	}
	c.r.stats.connsTotal.Add(1)
	c.r.stats.connsActive.Add(1)
	var hasSession bool
	c.client, hasSession = c.r.attachClient(c, c.id, c.addr)
	if c.client == nil {
		c.r.stats.connsActive.Add(-1)
		c.conn.Close()
		c.conn.Release()
		c.end()
		return
	}
	c.shard = c.r.shardFor(c.id)
	if hasSession {
		c.startWriter()
	}
	c.active = c.r.now()
	c.resume()
}

// resume runs the read loop until the carrier parks or ends. The poller
// calls it in a goroutine of its own.
func (c *carrier) resume() {
	err := c.readLoop()
	if err == errParked {
		return // the carrier belongs to the poller now
	}
	// What the carrier took may be lost with it: let resends through.
	c.client.resend.dropCarrier(c.resendNum)
	if now := c.r.now(); c.inUse(now) {
		c.client.deliveries.carrierLeft(now)
	}
	if c.writerStarted {
		close(c.stopWriter)
		<-c.writerDone
	}
	c.r.detachClient(c.id)
	c.r.stats.connsActive.Add(-1)
	c.conn.Close()
	c.conn.Release()
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && err != errSessionRefused { // readLoop always ends with an error
		c.r.log.Debug("carrier ended", "err", err)
	}
	c.end()
}

func (c *carrier) end() {
	if c.ended != nil {
		c.ended()
	}
}

// closeConn closes the connection from outside the reader, and wakes the
// carrier if it is parked so that it ends.
func (c *carrier) closeConn() {
	c.conn.Close()
	if c.park != nil {
		c.r.poller.Wake(c.park)
	}
}

// handshake reads the token and the ClientID within TokenTimeout.
func (c *carrier) handshake() bool {
	if err := c.conn.SetReadDeadline(time.Now().Add(c.r.cfg.TokenTimeout)); err != nil {
		return false
	}
	// Read the token first, so that a wrong one is refused at once.
	n, err := io.ReadFull(c.conn, c.hdr[:turbotunnel.TokenLen])
	if err == nil && c.r.seal != nil && bytes.Equal(c.hdr[:turbotunnel.TokenLen], tunnelseal.SealedToken[:]) {
		return c.handshakeSealed()
	}
	if err == nil && !bytes.Equal(c.hdr[:turbotunnel.TokenLen], turbotunnel.Token[:]) {
		c.r.stats.fail(failBadToken)
		c.r.log.Debug("carrier without turbotunnel token (unsupported oneshot connection)")
		return false
	}
	if err == nil {
		n, err = io.ReadFull(c.conn, c.hdr[turbotunnel.TokenLen:])
		n += turbotunnel.TokenLen
	}
	if err != nil {
		k := min(n, turbotunnel.TokenLen)
		switch {
		case n == 0 && errors.Is(err, io.EOF):
			// Proxies open and close connections without data (e.g.
			// their reachability probe): not worth a log line.
			c.r.stats.fail(failEOF)
		case !bytes.Equal(c.hdr[:k], turbotunnel.Token[:k]):
			c.r.stats.fail(failBadToken)
			c.r.log.Debug("carrier without turbotunnel token (unsupported oneshot connection)")
		case isTimeout(err):
			c.r.stats.fail(failTimeout)
			c.r.log.Debug("carrier handshake timed out", "bytes", n)
		default:
			c.r.stats.fail(failError)
			c.r.log.Debug("carrier handshake failed", "err", err)
		}
		return false
	}
	copy(c.id[:], c.hdr[turbotunnel.TokenLen:])
	c.idAddr = c.id.Addr()
	return true
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded)
}

// readLoop feeds the carrier's packets to its KCP state machine until the
// connection ends or the carrier parks.
func (c *carrier) readLoop() error {
	for {
		if err := c.readFirst(); err != nil {
			return err
		}
		bp := c.r.pools.packets.Get().(*[]byte)
		c.pr = prefixedReader{first: c.first[0], c: c}
		buf := (*bp)[:maxPacketSize]
		if c.seal != nil {
			buf = *bp // room for the tag
		}
		n, data, err := encapsulation.ReadChunk(&c.pr, buf)
		if errors.Is(err, io.ErrShortBuffer) {
			// Oversize packet: keep its head, as Snowflake does.
			n, err = len(buf), nil
		}
		if err == nil && data && c.seal != nil {
			n, err = c.open(buf[:n])
		}
		if err == nil && !data {
			// Padding: traffic for the idle timeout, nothing for KCP.
			c.r.pools.packets.Put(bp)
			c.refreshActive()
			continue
		}
		if err == nil && !c.client.admitted.Load() && !c.r.admitSession(c, (*bp)[:n]) {
			err = errSessionRefused
		}
		if err != nil {
			c.r.pools.packets.Put(bp)
			return err
		}
		c.noteDelivery(c.refreshActive())
		if !c.writerStarted {
			// Start sending before the packet is queued, so that the
			// answer to it finds a writer.
			c.startWriter()
		}
		c.r.stats.carrierIn.Add(uint64(n))
		c.client.resend.acked((*bp)[:n])
		c.shard.pconn.QueueIncoming((*bp)[:n], c.idAddr)
		c.r.pools.packets.Put(bp)
	}
}

// refreshActive records that a chunk arrived, but moves the idle deadline
// only every 1/16 of it: deadlines cost a timer update. It returns the
// time it read.
func (c *carrier) refreshActive() clock {
	now := c.r.now()
	if time.Duration(now-c.active) > c.r.cfg.CarrierIdleTimeout/16 {
		c.active = now
	}
	return now
}

// readFirst reads the first byte of the next chunk into c.first without
// holding a packet buffer. If nothing comes for parkAfter, it parks the
// carrier and returns errParked; if nothing comes before the idle
// deadline, it returns the timeout.
//
// A carrier that has just opened parks at once if nothing is waiting to
// be read: when many open together (a relay's restart, a wave of proxies),
// they would otherwise all hold a goroutine for parkAfter at the same time,
// and the runtime keeps what it grows for such a peak (goroutine
// descriptors are never freed). A carrier whose client is already sending
// is woken by the poller as soon as it is parked.
func (c *carrier) readFirst() error {
	idleEnd := c.active + clock(c.r.cfg.CarrierIdleTimeout)
	for {
		dl := idleEnd
		if c.park != nil && !c.unparkable {
			wait := parkAfter
			if !c.opened {
				c.opened, wait = true, 0
			}
			dl = min(dl, c.r.now()+clock(wait))
		}
		// Move the deadline forward, but not on every chunk.
		if c.deadline == 0 || dl < c.deadline || time.Duration(dl-c.deadline) > parkAfter/4 {
			if err := c.conn.SetReadDeadline(c.r.timeAt(dl)); err != nil {
				return err
			}
			c.deadline = dl
		}
		_, err := c.conn.Read(c.first[:])
		if err == nil || !isTimeout(err) || c.r.now() >= idleEnd {
			return err
		}
		if c.park == nil || c.unparkable {
			continue
		}
		c.conn.Release()
		c.r.stats.connsParked.Add(1)
		if c.r.poller.Park(c.park, c, c.r.timeAt(idleEnd)) {
			return errParked
		}
		c.r.stats.connsParked.Add(-1)
		c.unparkable = true
	}
}

// readMore reads the rest of a chunk: a deadline set for parking does not
// cut a chunk short, only the idle deadline does.
func (c *carrier) readMore(b []byte) (int, error) {
	for {
		n, err := c.conn.Read(b)
		if err == nil || !isTimeout(err) {
			return n, err
		}
		idleEnd := c.active + clock(c.r.cfg.CarrierIdleTimeout)
		if c.deadline >= idleEnd {
			return n, err
		}
		if err := c.conn.SetReadDeadline(c.r.timeAt(idleEnd)); err != nil {
			return n, err
		}
		c.deadline = idleEnd
	}
}

func (c *carrier) startWriter() {
	c.writerStarted = true
	// Made here, not for every carrier: most idle ones never write.
	c.stopWriter = make(chan struct{})
	c.writerDone = make(chan struct{})
	c.wake = make(chan struct{}, 1)
	queue := c.shard.pconn.OutgoingQueue(c.idAddr)
	go c.writeLoop(queue)
}

// writeLoop sends the packets KCP queues for this carrier's ClientID.
// Several carriers of one ClientID share the queue, so their packets spread
// over all of them, but for a carrier that stands by (standby.go).
// Outgoing packets that are already waiting are batched into one message.
func (c *carrier) writeLoop(queue <-chan []byte) {
	defer close(c.writerDone)
	pconn := c.shard.pconn
	for {
		waited, live := c.standBy()
		if !live {
			return
		}
		if waited {
			// The queue may have expired meanwhile: take the current one.
			queue = pconn.OutgoingQueue(c.idAddr)
		}
		var p []byte
		var ok bool
		select {
		case <-c.stopWriter:
			return
		case p, ok = <-queue:
		}
		if !ok {
			// The ClientID's queue expired: nothing more will come.
			c.closeConn()
			return
		}
		bp := c.r.pools.messages.Get().(*[]byte)
		msg := (*bp)[:wsserver.HeadRoom]
		msg = c.appendPacket(msg, c.withoutHeldResends(p))
		pconn.Restore(p)
	batch:
		for ok && len(msg)-wsserver.HeadRoom+maxPacketSize+3+tunnelseal.Overhead <= maxMessageSize {
			select {
			case p, ok = <-queue:
				if ok {
					msg = c.appendPacket(msg, c.withoutHeldResends(p))
					pconn.Restore(p)
				}
			default:
				break batch
			}
		}
		var err error
		if len(msg) > wsserver.HeadRoom { // else every segment was held
			err = c.conn.SetWriteDeadline(time.Now().Add(carrierWriteTimeout))
			if err == nil {
				_, err = c.conn.WriteWithHeadRoom(msg)
			}
		}
		*bp = msg[:0]
		c.r.pools.messages.Put(bp)
		c.sent()
		if err != nil || !ok {
			if err != nil {
				// Whatever the message held may be lost.
				c.client.resend.dropCarrier(c.resendNum)
			}
			c.closeConn()
			return
		}
		// Keep the ClientID's queue from expiring while it is served.
		queue = pconn.OutgoingQueue(c.idAddr)
	}
}

// withoutHeldResends returns the packet p less the resends the ClientID's
// resend filter holds back (resend.go), in place.
func (c *carrier) withoutHeldResends(p []byte) []byte {
	out, n := c.client.resend.filter(p, c.resendNum)
	if n.sent > 0 {
		c.r.stats.segmentsSent.Add(uint64(n.sent))
	}
	if n.resent > 0 {
		c.r.stats.resendsSent.Add(uint64(n.resent))
	}
	if n.held > 0 {
		c.r.stats.resendsHeld.Add(uint64(n.held))
	}
	return out
}

// appendPacket appends p to msg as a chunk, and returns msg; nothing if p
// is empty.
func (c *carrier) appendPacket(msg, p []byte) []byte {
	if len(p) == 0 {
		return msg
	}
	if c.seal != nil {
		return c.appendSealed(msg, p)
	}
	out, err := encapsulation.AppendDataPrefix(msg, len(p))
	if err != nil {
		return msg // longer than any chunk: KCP never sends one
	}
	c.r.stats.carrierOut.Add(uint64(len(p)))
	return append(out, p...)
}

// prefixedReader reads one byte that was read ahead, then the rest of the
// carrier's chunk.
type prefixedReader struct {
	first byte
	done  bool
	c     *carrier
}

func (p *prefixedReader) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	if !p.done {
		p.done = true
		b[0] = p.first
		return 1, nil
	}
	return p.c.readMore(b)
}
