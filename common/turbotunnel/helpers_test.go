package turbotunnel

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest/leak"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// verifyNoLeaks fails tb if goroutines other than kcp-go's global ones are
// left when it ends.
func verifyNoLeaks(tb testing.TB) {
	tb.Helper()
	tb.Cleanup(func() { leak.VerifyNone(tb) })
}

type emptyAddr struct{}

func (emptyAddr) Network() string { return "empty" }
func (emptyAddr) String() string  { return "empty" }

type intAddr int

func (i intAddr) Network() string { return "int" }
func (i intAddr) String() string  { return fmt.Sprintf("%d", int(i)) }

// sliceAddr is a net.Addr that cannot be a map key.
type sliceAddr []byte

func (sliceAddr) Network() string { return "slice" }
func (sliceAddr) String() string  { return "slice" }

// memCarrier is an in-memory, lossless, bounded packet link between two
// endpoints. Closing either end (or the carrier) kills both.
type memCarrier struct {
	toA, toB chan []byte
	dead     chan struct{}
	once     sync.Once
}

// newMemCarrier returns a carrier buffering 64 packets each way.
func newMemCarrier() *memCarrier {
	return &memCarrier{
		toA:  make(chan []byte, 64),
		toB:  make(chan []byte, 64),
		dead: make(chan struct{}),
	}
}

func (m *memCarrier) kill() { m.once.Do(func() { close(m.dead) }) }

// endA and endB are the two endpoints.
func (m *memCarrier) endA() *memEnd { return &memEnd{m: m, in: m.toA, out: m.toB, addr: intAddr(1)} }
func (m *memCarrier) endB() *memEnd { return &memEnd{m: m, in: m.toB, out: m.toA, addr: intAddr(2)} }

// memEnd is one endpoint of a memCarrier.
type memEnd struct {
	m    *memCarrier
	in   <-chan []byte
	out  chan<- []byte
	addr net.Addr
}

func (e *memEnd) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case <-e.m.dead:
		return 0, nil, net.ErrClosed
	case b := <-e.in:
		return copy(p, b), e.addr, nil
	}
}

func (e *memEnd) WriteTo(p []byte, _ net.Addr) (int, error) {
	b := append([]byte(nil), p...)
	select {
	case <-e.m.dead:
		return 0, net.ErrClosed
	case e.out <- b:
		return len(p), nil
	}
}

func (e *memEnd) Close() error { e.m.kill(); return nil }

// relayCarrier serves one carrier end for a QueuePacketConn, as the relay
// serves one WebSocket: packets read go to QueueIncoming with id, packets of
// id's outgoing queue are written to the carrier. It returns when the
// carrier dies (or its queue is closed); wg tracks its goroutines.
func relayCarrier(wg *sync.WaitGroup, server *QueuePacketConn, end *memEnd, id net.Addr) {
	wg.Add(2)
	go func() {
		defer wg.Done()
		defer end.Close()
		buf := make([]byte, 2048)
		for {
			n, _, err := end.ReadFrom(buf)
			if err != nil {
				return
			}
			server.QueueIncoming(buf[:n], id)
		}
	}()
	go func() {
		defer wg.Done()
		defer end.Close()
		for {
			select {
			case <-end.m.dead:
				return
			case p, ok := <-server.OutgoingQueue(id):
				if !ok {
					return
				}
				_, err := end.WriteTo(p, nil)
				server.Restore(p)
				if err != nil {
					return
				}
			}
		}
	}()
}

// directPacketConn is the client side of a QueuePacketConn with no carrier
// in between: WriteTo is QueueIncoming, ReadFrom takes from OutgoingQueue.
type directPacketConn struct {
	server     *QueuePacketConn
	id         net.Addr
	serverAddr net.Addr
	closed     chan struct{}
	once       sync.Once
}

func newDirectPacketConn(server *QueuePacketConn, id net.Addr) *directPacketConn {
	return &directPacketConn{server: server, id: id, serverAddr: server.LocalAddr(), closed: make(chan struct{})}
}

func (d *directPacketConn) ReadFrom(p []byte) (int, net.Addr, error) {
	select {
	case <-d.closed:
		return 0, nil, net.ErrClosed
	case b, ok := <-d.server.OutgoingQueue(d.id):
		if !ok {
			return 0, nil, net.ErrClosed
		}
		n := copy(p, b)
		d.server.Restore(b)
		return n, d.serverAddr, nil
	}
}

func (d *directPacketConn) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case <-d.closed:
		return 0, net.ErrClosed
	default:
	}
	d.server.QueueIncoming(p, d.id)
	return len(p), nil
}

func (d *directPacketConn) Close() error                     { d.once.Do(func() { close(d.closed) }); return nil }
func (d *directPacketConn) LocalAddr() net.Addr              { return intAddr(99) }
func (d *directPacketConn) SetDeadline(time.Time) error      { return nil }
func (d *directPacketConn) SetReadDeadline(time.Time) error  { return nil }
func (d *directPacketConn) SetWriteDeadline(time.Time) error { return nil }

// discardCarrier is a carrier that swallows writes and never delivers a
// packet; its ReadFrom returns when it is closed.
type discardCarrier struct {
	closed chan struct{}
	once   sync.Once
}

func newDiscardCarrier() *discardCarrier { return &discardCarrier{closed: make(chan struct{})} }

func (d *discardCarrier) ReadFrom([]byte) (int, net.Addr, error) {
	<-d.closed
	return 0, nil, net.ErrClosed
}

func (d *discardCarrier) WriteTo(p []byte, _ net.Addr) (int, error) {
	select {
	case <-d.closed:
		return 0, net.ErrClosed
	default:
		return len(p), nil
	}
}

func (d *discardCarrier) Close() error                     { d.once.Do(func() { close(d.closed) }); return nil }
func (d *discardCarrier) LocalAddr() net.Addr              { return emptyAddr{} }
func (d *discardCarrier) SetDeadline(time.Time) error      { return nil }
func (d *discardCarrier) SetReadDeadline(time.Time) error  { return nil }
func (d *discardCarrier) SetWriteDeadline(time.Time) error { return nil }
