package client

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/client/internal/multipath"
	"github.com/flurrypt/flurry/common/turbotunnel"
)

// kcpExpectsReply reports whether the relay answers the KCP packet p: it
// carries data or a window probe, not only acknowledgements and window
// announcements. A malformed packet expects nothing.
func kcpExpectsReply(p []byte) bool {
	for {
		seg, rest, ok := turbotunnel.NextKCPSegment(p)
		if !ok {
			return false
		}
		switch seg.Cmd() {
		case turbotunnel.KCPCmdPush, turbotunnel.KCPCmdWask:
			return true
		case turbotunnel.KCPCmdAck, turbotunnel.KCPCmdWins:
		default:
			return false
		}
		p = rest
	}
}

// kcpProber makes window probes for the reply watch: it remembers the
// header fields of the session's latest outgoing packet, so that a probe
// tells the relay nothing new. The relay's KCP answers a probe (WASK)
// with its window (WINS) at its next flush.
type kcpProber struct {
	convUna atomic.Uint64 // conv<<32 | una of the latest outgoing packet; 0: none yet
	wnd     atomic.Uint32 // its window
}

// expectsReply is kcpExpectsReply, recording p's header for probes.
func (k *kcpProber) expectsReply(p []byte) bool {
	if seg, _, ok := turbotunnel.NextKCPSegment(p); ok {
		k.convUna.Store(uint64(seg.Conv())<<32 | uint64(seg.Una()))
		k.wnd.Store(uint32(seg.Wnd()))
	}
	return kcpExpectsReply(p)
}

// probe returns a window probe for the session, or nil before its first
// packet. The una and window are those the session last sent: through a
// carrier the relay has been hearing, the probe tells it nothing but that
// it must answer; as the first packet of a new carrier, it brings the
// acknowledgement that may have died with the carrier before.
func (k *kcpProber) probe() []byte {
	cu := k.convUna.Load()
	if cu == 0 {
		return nil
	}
	p := make([]byte, turbotunnel.KCPHeaderLen) // the layout: turbotunnel.KCPSegment
	binary.LittleEndian.PutUint32(p[0:4], uint32(cu>>32))
	p[4] = turbotunnel.KCPCmdWask
	binary.LittleEndian.PutUint16(p[6:8], uint16(k.wnd.Load()))
	binary.LittleEndian.PutUint32(p[16:20], uint32(cu))
	return p
}

// kcpAcks follows, from the packets a session exchanges, whether the relay
// has acknowledged every data segment the session sent and when the relay
// last sent anything: a closing session lingers on them (see closeLinger).
// KCP writes and reads from goroutines of its own, hence the atomics.
type kcpAcks struct {
	next     atomic.Uint64 // 1<<32 | the sn after the latest data segment sent; 0: none sent
	una      atomic.Uint32 // the relay's una in its latest packet
	lastRecv atomic.Int64  // time.Now().UnixNano() of the relay's latest packet; 0: none
}

// sent notes the data segments of the outgoing KCP packet p.
func (k *kcpAcks) sent(p []byte) {
	for seg, rest, ok := turbotunnel.NextKCPSegment(p); ok; seg, rest, ok = turbotunnel.NextKCPSegment(rest) {
		if seg.Cmd() == turbotunnel.KCPCmdPush {
			next := seg.SN() + 1
			for {
				old := k.next.Load()
				// Retransmissions carry earlier sequence numbers.
				if old != 0 && int32(next-uint32(old)) <= 0 {
					break
				}
				if k.next.CompareAndSwap(old, 1<<32|uint64(next)) {
					break
				}
			}
		}
	}
}

// received notes the relay's acknowledgement (una) in the incoming KCP
// packet p: every segment of a packet carries the same.
func (k *kcpAcks) received(p []byte, now time.Time) {
	k.lastRecv.Store(now.UnixNano())
	seg, _, ok := turbotunnel.NextKCPSegment(p)
	if !ok {
		return
	}
	una := seg.Una()
	for {
		// Packets through different proxies may arrive out of order.
		old := k.una.Load()
		if int32(una-old) <= 0 || k.una.CompareAndSwap(old, una) {
			return
		}
	}
}

// allAcked reports whether the relay has acknowledged every data segment
// sent so far.
func (k *kcpAcks) allAcked() bool {
	next := k.next.Load()
	return next == 0 || int32(k.una.Load()-uint32(next)) >= 0
}

// quietFor reports whether the relay has sent nothing for d.
func (k *kcpAcks) quietFor(d time.Duration, now time.Time) bool {
	last := k.lastRecv.Load()
	return last == 0 || now.Sub(time.Unix(0, last)) >= d
}

// ackWatchConn is a session's packet conn as its KCP sees it: it shows
// every packet to acks on the way.
type ackWatchConn struct {
	*multipath.Conn
	acks *kcpAcks
}

func (c ackWatchConn) ReadFrom(p []byte) (int, net.Addr, error) {
	n, addr, err := c.Conn.ReadFrom(p)
	if err == nil {
		c.acks.received(p[:n], time.Now())
	}
	return n, addr, err
}

func (c ackWatchConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.acks.sent(p)
	return c.Conn.WriteTo(p, addr)
}
