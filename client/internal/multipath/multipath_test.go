package multipath

import (
	"bytes"
	"errors"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pipeCarrier is an in-memory carrier: packets written to it appear on out,
// packets sent to in are read from it.
type pipeCarrier struct {
	in, out   chan []byte
	dead      chan struct{}
	closeOnce sync.Once
	closed    chan struct{}
	reason    error // set by CloseWithReason before closed closes
}

func newPipeCarrier() *pipeCarrier {
	return &pipeCarrier{in: make(chan []byte, 64), out: make(chan []byte, 64), dead: make(chan struct{}), closed: make(chan struct{})}
}

func (p *pipeCarrier) ReadPacket(b []byte) (int, error) {
	select {
	case pkt := <-p.in:
		return copy(b, pkt), nil
	case <-p.closed:
		return 0, net.ErrClosed
	}
}

func (p *pipeCarrier) WritePacket(b []byte) error {
	select {
	case p.out <- append([]byte(nil), b...):
		return nil
	case <-p.closed:
		return net.ErrClosed
	}
}

func (p *pipeCarrier) Done() <-chan struct{} { return p.dead }
func (p *pipeCarrier) Close() error          { return p.CloseWithReason(nil) }
func (p *pipeCarrier) CloseWithReason(reason error) error {
	p.closeOnce.Do(func() {
		p.reason = reason
		close(p.closed)
	})
	return nil
}
func (p *pipeCarrier) die() { close(p.dead) }

var hangGuard = 10 * time.Second

func recvOne(tb testing.TB, ch <-chan []byte) []byte {
	tb.Helper()
	select {
	case p := <-ch:
		return p
	case <-time.After(hangGuard):
		tb.Fatal("no packet")
		return nil
	}
}

func TestSendAndReceive(t *testing.T) {
	c := New(nil, nil, ReplyWatch{}, 0)
	defer c.Close()
	// Written before any carrier exists: waits in the queue.
	if _, err := c.WriteTo([]byte("early"), nil); err != nil {
		t.Fatal(err)
	}
	a := newPipeCarrier()
	removed, err := c.Add(a)
	if err != nil {
		t.Fatal(err)
	}
	if got := recvOne(t, a.out); string(got) != "early" {
		t.Fatalf("carrier got %q", got)
	}
	a.in <- []byte("reply")
	buf := make([]byte, BufferSize)
	n, _, err := c.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "reply" {
		t.Fatalf("ReadFrom = %q, %v", buf[:n], err)
	}

	// A second carrier: packets spread over both, replies from both.
	b := newPipeCarrier()
	if _, err := c.Add(b); err != nil {
		t.Fatal(err)
	}
	if c.Len() != 2 {
		t.Fatalf("Len = %d", c.Len())
	}
	b.in <- []byte("from b")
	n, _, _ = c.ReadFrom(buf)
	if string(buf[:n]) != "from b" {
		t.Fatalf("ReadFrom = %q", buf[:n])
	}

	// a dies: it leaves the set, is closed, and b carries everything.
	a.die()
	<-removed
	select {
	case <-a.closed:
	default:
		t.Error("dead carrier not closed")
	}
	if c.Len() != 1 {
		t.Fatalf("Len after death = %d", c.Len())
	}
	for i := range 10 {
		c.WriteTo([]byte{byte(i)}, nil)
	}
	for i := range 10 {
		if got := recvOne(t, b.out); !bytes.Equal(got, []byte{byte(i)}) {
			t.Fatalf("packet %d = %v", i, got)
		}
	}
	if st := c.Stats(); st.Carriers != 2 || st.SendDropped != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestQueuesDropWhenFull(t *testing.T) {
	c := New(nil, nil, ReplyWatch{}, 0)
	defer c.Close()
	for range QueueSize + 10 {
		c.WriteTo([]byte("x"), nil)
	}
	if st := c.Stats(); st.SendDropped != 10 {
		t.Errorf("SendDropped = %d, want 10", st.SendDropped)
	}
}

func TestDeadlineAndClose(t *testing.T) {
	c := New(nil, nil, ReplyWatch{}, 0)
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	if _, _, err := c.ReadFrom(make([]byte, 10)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("ReadFrom after deadline = %v", err)
	}
	c.SetReadDeadline(time.Time{})
	a := newPipeCarrier()
	if _, err := c.Add(a); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := c.ReadFrom(make([]byte, 10))
		done <- err
	}()
	c.Close()
	c.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Close = %v", err)
	}
	select {
	case <-a.closed:
	default:
		t.Error("carrier not closed by Close")
	}
	if _, err := c.WriteTo([]byte("x"), nil); !errors.Is(err, net.ErrClosed) {
		t.Errorf("WriteTo after Close = %v", err)
	}
	b := newPipeCarrier()
	if _, err := c.Add(b); !errors.Is(err, ErrConnClosed) {
		t.Errorf("Add after Close = %v", err)
	}
}

// BenchmarkRoundTrip measures one packet out through a carrier and one
// back in.
func BenchmarkRoundTrip(b *testing.B) {
	c := New(nil, nil, ReplyWatch{}, 0)
	defer c.Close()
	car := newPipeCarrier()
	if _, err := c.Add(car); err != nil {
		b.Fatal(err)
	}
	pkt := make([]byte, 1400)
	buf := make([]byte, BufferSize)
	b.ReportAllocs()
	b.SetBytes(int64(len(pkt)))
	for b.Loop() {
		c.WriteTo(pkt, nil)
		p := <-car.out
		car.in <- p
		if _, _, err := c.ReadFrom(buf); err != nil {
			b.Fatal(err)
		}
	}
}
