package relay

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
)

const (
	// maxPacketSize is the largest KCP packet a carrier accepts; longer
	// ones are truncated, as in Snowflake (KCP's MTU is 1400).
	maxPacketSize = turbotunnel.MTU
	// maxMessageSize bounds a WebSocket message built from a batch of
	// outgoing packets. With gorilla's 4 KiB pooled write buffer (14 bytes
	// of which are the frame header), a batch still goes out in gorilla's
	// single-copy fast path.
	maxMessageSize = 4096 - 14
	// carrierWriteTimeout closes a carrier whose peer does not take a
	// message for this long.
	carrierWriteTimeout = 30 * time.Second
)

// bufferPools are the relay's pooled buffers.
type bufferPools struct {
	// packets holds *[]byte buffers of maxPacketSize for reading packets.
	// A carrier takes one only while a packet is arriving: an idle carrier
	// holds none.
	packets sync.Pool
	// messages holds *bytes.Buffer for building outgoing messages; a
	// carrier takes one only while it has packets to send.
	messages sync.Pool
	// copies holds *[]byte buffers of copyBufferSize for reading from
	// targets.
	copies sync.Pool
}

func newBufferPools() *bufferPools {
	p := &bufferPools{}
	p.packets.New = func() any {
		b := make([]byte, maxPacketSize)
		return &b
	}
	p.messages.New = func() any {
		return bytes.NewBuffer(make([]byte, 0, maxMessageSize))
	}
	p.copies.New = func() any {
		b := make([]byte, copyBufferSize)
		return &b
	}
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
// Goroutines: the reader (serve) runs from the end of the upgrade to the
// end of the connection; the writer starts when the carrier has something
// to send (its ClientID has a session, or it has delivered a packet) and
// is joined by the reader.
type carrier struct {
	r    *Relay
	conn net.Conn
	addr netip.Addr // client_ip from the URL, zero if unknown
	peer netip.Addr // the proxy's budget key (see admission.go)

	// Owned by the reader goroutine.
	hdr           [turbotunnel.TokenLen + 8]byte
	first         [1]byte
	pr            prefixedReader
	id            turbotunnel.ClientID
	idAddr        net.Addr // id.Addr(), made once: passing it and its String allocate nothing
	shard         *shard
	client        *clientState // the ClientID's state, attached while the carrier runs
	writerStarted bool
	stopWriter    chan struct{} // closed by the reader when it ends
	writerDone    chan struct{} // closed by the writer
}

func newCarrier(r *Relay, conn net.Conn, addr netip.Addr) *carrier {
	return &carrier{r: r, conn: conn, addr: addr}
}

// serve runs the carrier: handshake, then the read loop. It closes the
// connection before returning.
func (c *carrier) serve() {
	defer c.conn.Close()
	if !c.handshake() {
		return
	}
	c.r.stats.connsTotal.Add(1)
	c.r.stats.connsActive.Add(1)
	defer c.r.stats.connsActive.Add(-1)
	var hasSession bool
	c.client, hasSession = c.r.attachClient(c.id, c.addr)
	defer c.r.detachClient(c.id)
	c.shard = c.r.shardFor(c.id)
	c.stopWriter = make(chan struct{})
	c.writerDone = make(chan struct{})
	if hasSession {
		c.startWriter()
	}
	err := c.readLoop()
	close(c.stopWriter)
	if c.writerStarted {
		<-c.writerDone
	}
	if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) && err != errSessionRefused { // readLoop always ends with an error
		c.r.log.Debug("carrier ended", "err", err)
	}
}

// handshake reads the token and the ClientID within TokenTimeout.
func (c *carrier) handshake() bool {
	if err := c.conn.SetReadDeadline(time.Now().Add(c.r.cfg.TokenTimeout)); err != nil {
		return false
	}
	// Read the token first, so that a wrong one is refused at once.
	n, err := io.ReadFull(c.conn, c.hdr[:turbotunnel.TokenLen])
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
// connection ends.
func (c *carrier) readLoop() error {
	idle := c.r.cfg.CarrierIdleTimeout
	var deadlineSet time.Time
	for {
		// Push the idle deadline forward, but not on every packet.
		if now := time.Now(); now.Sub(deadlineSet) > idle/16 {
			if err := c.conn.SetReadDeadline(now.Add(idle)); err != nil {
				return err
			}
			deadlineSet = now
		}
		// Wait for the first byte of the next chunk without holding a
		// packet buffer: an idle carrier should cost as little as possible.
		if _, err := c.conn.Read(c.first[:]); err != nil {
			return err
		}
		bp := c.r.pools.packets.Get().(*[]byte)
		c.pr = prefixedReader{first: c.first[0], r: c.conn}
		n, err := encapsulation.ReadData(&c.pr, *bp)
		if errors.Is(err, io.ErrShortBuffer) {
			// Oversize packet: keep its head, as Snowflake does.
			n, err = len(*bp), nil
		}
		if err == nil && !c.client.admitted.Load() && !c.r.admitSession(c, (*bp)[:n]) {
			err = errSessionRefused
		}
		if err != nil {
			c.r.pools.packets.Put(bp)
			return err
		}
		if !c.writerStarted {
			// Start sending before the packet is queued, so that the
			// answer to it finds a writer.
			c.startWriter()
		}
		c.r.stats.carrierIn.Add(uint64(n))
		c.shard.pconn.QueueIncoming((*bp)[:n], c.idAddr)
		c.r.pools.packets.Put(bp)
	}
}

func (c *carrier) startWriter() {
	c.writerStarted = true
	queue := c.shard.pconn.OutgoingQueue(c.idAddr)
	go c.writeLoop(queue)
}

// writeLoop sends the packets KCP queues for this carrier's ClientID.
// Several carriers of one ClientID share the queue, so their packets spread
// over all of them. Outgoing packets that are already waiting are batched
// into one message.
func (c *carrier) writeLoop(queue <-chan []byte) {
	defer close(c.writerDone)
	pconn := c.shard.pconn
	for {
		var p []byte
		var ok bool
		select {
		case <-c.stopWriter:
			return
		case p, ok = <-queue:
		}
		if !ok {
			// The ClientID's queue expired: nothing more will come.
			c.conn.Close()
			return
		}
		buf := c.r.pools.messages.Get().(*bytes.Buffer)
		buf.Reset()
		c.appendPacket(buf, p)
		pconn.Restore(p)
	batch:
		for ok && buf.Len()+maxPacketSize+3 <= maxMessageSize {
			select {
			case p, ok = <-queue:
				if ok {
					c.appendPacket(buf, p)
					pconn.Restore(p)
				}
			default:
				break batch
			}
		}
		err := c.conn.SetWriteDeadline(time.Now().Add(carrierWriteTimeout))
		if err == nil {
			_, err = c.conn.Write(buf.Bytes())
		}
		c.r.pools.messages.Put(buf)
		if err != nil || !ok {
			c.conn.Close()
			return
		}
		// Keep the ClientID's queue from expiring while it is served.
		queue = pconn.OutgoingQueue(c.idAddr)
	}
}

func (c *carrier) appendPacket(buf *bytes.Buffer, p []byte) {
	// Writing to a bytes.Buffer cannot fail.
	_, _ = encapsulation.WriteData(buf, p)
	c.r.stats.carrierOut.Add(uint64(len(p)))
}

// prefixedReader reads one byte that was read ahead, then r.
type prefixedReader struct {
	first byte
	done  bool
	r     io.Reader
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
	return p.r.Read(b)
}
