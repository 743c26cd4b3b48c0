package turbotunnel

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// carrierDialer dials memCarriers and hands their far ends to the test.
type carrierDialer struct {
	far chan *memEnd // the far end of each dialed carrier, in order
	err error        // returned instead of a carrier once set via fail
	mu  sync.Mutex
}

func newCarrierDialer() *carrierDialer {
	return &carrierDialer{far: make(chan *memEnd, 16)}
}

func (d *carrierDialer) fail(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
}

func (d *carrierDialer) dial(ctx context.Context) (net.PacketConn, error) {
	d.mu.Lock()
	err := d.err
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m := newMemCarrier()
	d.far <- m.endB()
	return m.endA(), nil
}

// nextCarrier returns the far end of the next dialed carrier.
func (d *carrierDialer) nextCarrier(tb testing.TB) *memEnd {
	tb.Helper()
	select {
	case e := <-d.far:
		return e
	case <-time.After(10 * time.Second): // a hang guard, not a synchronisation
		tb.Fatal("no carrier dialed")
		return nil
	}
}

func readPacket(tb testing.TB, c net.PacketConn) string {
	tb.Helper()
	buf := make([]byte, 2048)
	n, _, err := c.ReadFrom(buf)
	if err != nil {
		tb.Fatalf("ReadFrom: %v", err)
	}
	return string(buf[:n])
}

func TestRedialAfterCarrierDies(t *testing.T) {
	verifyNoLeaks(t)
	d := newCarrierDialer()
	remote := intAddr(7)
	c := NewRedialPacketConn(intAddr(6), remote, d.dial)
	defer c.Close()

	far := d.nextCarrier(t)
	if _, err := c.WriteTo([]byte("one"), nil); err != nil {
		t.Fatal(err)
	}
	if got := readPacket(t, far); got != "one" {
		t.Fatalf("carrier 1 got %q", got)
	}
	if _, err := far.WriteTo([]byte("reply one"), nil); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 100)
	n, addr, err := c.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "reply one" || addr != remote {
		t.Fatalf("ReadFrom = (%q, %v, %v)", buf[:n], addr, err)
	}

	// Kill the carrier from the far side: the conn dials another one and
	// packets flow again, both ways.
	far.Close()
	far = d.nextCarrier(t)
	if _, err := c.WriteTo([]byte("two"), nil); err != nil {
		t.Fatal(err)
	}
	if got := readPacket(t, far); got != "two" {
		t.Fatalf("carrier 2 got %q", got)
	}
	if _, err := far.WriteTo([]byte("reply two"), nil); err != nil {
		t.Fatal(err)
	}
	if got := readPacket(t, c); got != "reply two" {
		t.Fatalf("ReadFrom = %q", got)
	}
	if s := c.Stats(); s.Dials != 2 {
		t.Fatalf("Dials = %d, want 2", s.Dials)
	}
}

// TestRedialQueuesBetweenCarriers: packets written while no carrier is up
// wait in the send queue and go out on the next carrier.
func TestRedialQueuesBetweenCarriers(t *testing.T) {
	verifyNoLeaks(t)
	release := make(chan struct{})
	far := make(chan *memEnd, 1)
	dial := func(ctx context.Context) (net.PacketConn, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		m := newMemCarrier()
		far <- m.endB()
		return m.endA(), nil
	}
	c := NewRedialPacketConn(intAddr(6), intAddr(7), dial)
	defer c.Close()
	for _, s := range []string{"a", "b", "c"} {
		if _, err := c.WriteTo([]byte(s), nil); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	end := <-far
	for _, want := range []string{"a", "b", "c"} {
		if got := readPacket(t, end); got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
}

func TestRedialDialErrorEndsConn(t *testing.T) {
	verifyNoLeaks(t)
	d := newCarrierDialer()
	c := NewRedialPacketConn(intAddr(6), intAddr(7), d.dial)
	defer c.Close()
	far := d.nextCarrier(t)

	blocked := make(chan error)
	go func() {
		_, _, err := c.ReadFrom(make([]byte, 10))
		blocked <- err
	}()
	boom := errors.New("no more proxies")
	d.fail(boom)
	far.Close()

	err := <-blocked
	if !errors.Is(err, ErrDial) || !errors.Is(err, boom) {
		t.Fatalf("ReadFrom after dial error: %v, want ErrDial wrapping boom", err)
	}
	if _, err := c.WriteTo([]byte("x"), nil); !errors.Is(err, boom) {
		t.Fatalf("WriteTo after dial error: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close does not overwrite the dial error.
	if _, _, err := c.ReadFrom(make([]byte, 10)); !errors.Is(err, boom) {
		t.Fatalf("ReadFrom after Close: %v", err)
	}
}

func TestRedialNilCarrier(t *testing.T) {
	verifyNoLeaks(t)
	c := NewRedialPacketConn(intAddr(6), intAddr(7), func(context.Context) (net.PacketConn, error) { return nil, nil })
	defer c.Close()
	if _, _, err := c.ReadFrom(make([]byte, 10)); !errors.Is(err, ErrNilCarrier) {
		t.Fatalf("ReadFrom: %v, want ErrNilCarrier", err)
	}
}

// TestRedialClose: Close cancels a dial in progress, wakes readers, and
// leaves no goroutine behind; it is idempotent.
func TestRedialClose(t *testing.T) {
	tests := []struct {
		name string
		dial func(*carrierDialer) func(context.Context) (net.PacketConn, error)
	}{
		{"while dialing", func(*carrierDialer) func(context.Context) (net.PacketConn, error) {
			return func(ctx context.Context) (net.PacketConn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}
		}},
		{"with a carrier", func(d *carrierDialer) func(context.Context) (net.PacketConn, error) { return d.dial }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verifyNoLeaks(t)
			d := newCarrierDialer()
			c := NewRedialPacketConn(intAddr(6), intAddr(7), tt.dial(d))
			blocked := make(chan error)
			go func() {
				_, _, err := c.ReadFrom(make([]byte, 10))
				blocked <- err
			}()
			for range 2 {
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if err := <-blocked; !errors.Is(err, net.ErrClosed) {
				t.Fatalf("blocked ReadFrom: %v, want net.ErrClosed", err)
			}
			if _, err := c.WriteTo([]byte("x"), nil); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("WriteTo after Close: %v", err)
			}
		})
	}
}

func TestRedialDropCounting(t *testing.T) {
	verifyNoLeaks(t)
	const extra = 88
	// No carrier ever comes: writes pile up in the send queue.
	c := NewRedialPacketConn(intAddr(6), intAddr(7), func(ctx context.Context) (net.PacketConn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	defer c.Close()
	for range QueueSize + extra {
		if n, err := c.WriteTo([]byte("x"), nil); n != 1 || err != nil {
			t.Fatalf("WriteTo = (%d, %v)", n, err)
		}
	}
	if s := c.Stats(); s.SendDropped != extra {
		t.Fatalf("SendDropped = %d, want %d", s.SendDropped, extra)
	}

	// The receive side: an unbuffered carrier delivers more than the
	// receive queue holds; nobody reads.
	far := make(chan *memEnd, 1)
	c2 := NewRedialPacketConn(intAddr(6), intAddr(7), func(ctx context.Context) (net.PacketConn, error) {
		m := newMemCarrierSize(0)
		far <- m.endB()
		return m.endA(), nil
	})
	defer c2.Close()
	end := <-far
	for range QueueSize + extra {
		if _, err := end.WriteTo([]byte("y"), nil); err != nil {
			t.Fatal(err)
		}
	}
	// Each write returned once the reader had the packet; Close waits for
	// the reader to finish with the last one.
	c2.Close()
	if s := c2.Stats(); s.RecvDropped != extra {
		t.Fatalf("RecvDropped = %d, want %d", s.RecvDropped, extra)
	}
}

func TestRedialReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newCarrierDialer()
		c := NewRedialPacketConn(intAddr(6), intAddr(7), d.dial)
		defer c.Close()
		far := <-d.far
		if err := c.SetDeadline(time.Now().Add(3 * time.Second)); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, _, err := c.ReadFrom(make([]byte, 10)); !isTimeout(err) {
			t.Fatalf("ReadFrom: %v, want a timeout", err)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Fatalf("timed out after %v", waited)
		}
		if err := c.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		if _, err := far.WriteTo([]byte("ok"), nil); err != nil {
			t.Fatal(err)
		}
		if got := readPacket(t, c); got != "ok" {
			t.Fatalf("got %q", got)
		}
		if err := c.SetWriteDeadline(time.Now()); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRedialWriteToCopies: the caller may reuse its slice at once.
func TestRedialWriteToCopies(t *testing.T) {
	verifyNoLeaks(t)
	d := newCarrierDialer()
	c := NewRedialPacketConn(intAddr(6), intAddr(7), d.dial)
	defer c.Close()
	far := d.nextCarrier(t)
	p := []byte("original")
	if _, err := c.WriteTo(p, nil); err != nil {
		t.Fatal(err)
	}
	copy(p, "scribble")
	if got := readPacket(t, far); got != "original" {
		t.Fatalf("got %q", got)
	}
	big := make([]byte, RedialBufferSize+100)
	big[len(big)-1] = 'z'
	if _, err := c.WriteTo(big, nil); err != nil {
		t.Fatal(err)
	}
	if got := readPacket(t, far); len(got) != len(big) || got[len(got)-1] != 'z' {
		t.Fatalf("oversize packet came out as %d bytes", len(got))
	}
}

func BenchmarkRedialWriteTo(b *testing.B) {
	// A carrier that swallows everything: measures WriteTo and the writer
	// goroutine's hand-off to the carrier.
	c := NewRedialPacketConn(intAddr(6), intAddr(7), func(context.Context) (net.PacketConn, error) {
		return newDiscardCarrier(), nil
	})
	defer c.Close()
	p := make([]byte, 500)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.WriteTo(p, nil); err != nil {
			b.Fatal(err)
		}
	}
}
