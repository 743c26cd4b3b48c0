package turbotunnel

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestClientID(t *testing.T) {
	id := ClientID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	if got := id.String(); got != "0123456789abcdef" {
		t.Errorf("String() = %q", got)
	}
	if got := id.Network(); got != "clientid" {
		t.Errorf("Network() = %q", got)
	}
	if a, b := NewClientID(), NewClientID(); a == b || a == (ClientID{}) {
		t.Errorf("NewClientID returned %v and %v", a, b)
	}
	want := [TokenLen]byte{0x12, 0x93, 0x60, 0x5d, 0x27, 0x81, 0x75, 0xf5}
	if Token != want {
		t.Errorf("Token = %x", Token)
	}
}

func TestClientIDAddr(t *testing.T) {
	id := ClientID{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef}
	a := id.Addr()
	if a.String() != "0123456789abcdef" || a.Network() != "clientid" {
		t.Errorf("Addr: %q %q", a.Network(), a.String())
	}
	if a != id.Addr() {
		t.Error("two Addrs of one ClientID differ")
	}
	if a == net.Addr(id) || a == (ClientID{}).Addr() {
		t.Error("an Addr equals a bare ClientID or another ClientID's Addr")
	}
	for _, addr := range []net.Addr{a, id} {
		if got, ok := ClientIDFromAddr(addr); !ok || got != id {
			t.Errorf("ClientIDFromAddr(%T) = %v, %v", addr, got, ok)
		}
	}
	if _, ok := ClientIDFromAddr(emptyAddr{}); ok {
		t.Error("ClientIDFromAddr accepted another address type")
	}
	if _, ok := ClientIDFromAddr(nil); ok {
		t.Error("ClientIDFromAddr accepted nil")
	}

	// Carriers of one client each make their own Addr: they share one
	// outgoing queue.
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 0)
	defer conn.Close()
	if _, err := conn.WriteTo([]byte("hello"), id.Addr()); err != nil {
		t.Fatal(err)
	}
	select {
	case p := <-conn.OutgoingQueue(id.Addr()):
		if string(p) != "hello" {
			t.Fatalf("got %q", p)
		}
		conn.Restore(p)
	default:
		t.Fatal("the packet is not in the queue of another Addr of the same ClientID")
	}
}

func TestQueueIncomingOversize(t *testing.T) {
	const payload = "abcdefghijklmnopqrstuvwxyz"
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, len(payload)-1)
	defer conn.Close()
	conn.QueueIncoming([]byte(payload), emptyAddr{})
	var p [500]byte
	n, addr, err := conn.ReadFrom(p[:])
	if err != nil {
		t.Fatal(err)
	}
	if addr != (emptyAddr{}) || string(p[:n]) != payload[:len(payload)-1] {
		t.Fatalf("got %q from %v, want %q", p[:n], addr, payload[:len(payload)-1])
	}
	if s := conn.Stats(); s.Truncated != 1 {
		t.Errorf("Truncated = %d, want 1", s.Truncated)
	}
}

func TestWriteToOversize(t *testing.T) {
	const payload = "abcdefghijklmnopqrstuvwxyz"
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, len(payload)-1)
	defer conn.Close()
	if n, err := conn.WriteTo([]byte(payload), emptyAddr{}); n != len(payload) || err != nil {
		t.Fatalf("WriteTo = (%d, %v)", n, err)
	}
	p := <-conn.OutgoingQueue(emptyAddr{})
	if string(p) != payload[:len(payload)-1] {
		t.Fatalf("got %q, want %q", p, payload[:len(payload)-1])
	}
	if s := conn.Stats(); s.Truncated != 1 {
		t.Errorf("Truncated = %d, want 1", s.Truncated)
	}
}

// TestReadFromShortBuffer: ReadFrom truncates to the caller's buffer, as
// UDP does.
func TestReadFromShortBuffer(t *testing.T) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	defer conn.Close()
	conn.QueueIncoming([]byte("hello"), intAddr(1))
	var p [3]byte
	n, addr, err := conn.ReadFrom(p[:])
	if err != nil || string(p[:n]) != "hel" || addr != intAddr(1) {
		t.Fatalf("ReadFrom = (%q, %v, %v)", p[:n], addr, err)
	}
}

func TestRestore(t *testing.T) {
	const mtu = 500
	const payload = "hello"
	tests := []struct {
		name     string
		restored []byte
		wantCap  int // cap of the next packet; 0: any >= mtu
	}{
		// Restore ignores slices shorter than the MTU (TestRestoreMTU).
		{"len and cap below MTU", make([]byte, mtu-1), mtu},
		// Restore takes slices whose cap is the MTU (TestRestoreCap).
		{"cap MTU, len 0", make([]byte, 0, mtu), mtu},
		{"len MTU", make([]byte, mtu), mtu},
		// Restore ignores slices much bigger than the MTU, which would
		// pin memory.
		{"cap 4*MTU", make([]byte, 0, 4*mtu), mtu},
		{"nil", nil, mtu},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn := NewQueuePacketConn(emptyAddr{}, time.Hour, mtu)
			defer conn.Close()
			conn.Restore(tt.restored)
			// This WriteTo may use the slice just restored.
			if _, err := conn.WriteTo([]byte(payload), emptyAddr{}); err != nil {
				t.Fatal(err)
			}
			p := <-conn.OutgoingQueue(emptyAddr{})
			if cap(p) != tt.wantCap {
				t.Fatalf("cap = %d, want %d", cap(p), tt.wantCap)
			}
			if string(p) != payload {
				t.Fatalf("payload %q, want %q", p, payload)
			}
		})
	}
}

// TestWriteToCopies: WriteTo and QueueIncoming copy their argument, so the
// caller (kcp-go) may reuse it at once (Snowflake issue 40260).
func TestWriteToCopies(t *testing.T) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	defer conn.Close()
	p := []byte("original")
	if _, err := conn.WriteTo(p, intAddr(1)); err != nil {
		t.Fatal(err)
	}
	conn.QueueIncoming(p, intAddr(2))
	copy(p, "scribble")
	if got := <-conn.OutgoingQueue(intAddr(1)); string(got) != "original" {
		t.Fatalf("outgoing packet changed to %q", got)
	}
	var buf [100]byte
	n, _, err := conn.ReadFrom(buf[:])
	if err != nil || string(buf[:n]) != "original" {
		t.Fatalf("incoming packet (%q, %v)", buf[:n], err)
	}
}

func TestDropCounting(t *testing.T) {
	const extra = 88
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	defer conn.Close()
	for i := range QueueSize + extra {
		conn.QueueIncoming([]byte{byte(i)}, intAddr(1))
	}
	for i := range OutgoingQueueSize + extra {
		if n, err := conn.WriteTo([]byte{byte(i)}, intAddr(2)); n != 1 || err != nil {
			t.Fatalf("WriteTo = (%d, %v)", n, err)
		}
	}
	conn.QueueIncoming([]byte("x"), nil)
	s := conn.Stats()
	if s.IncomingDropped != extra+1 || s.OutgoingDropped != extra || s.Clients != 1 {
		t.Fatalf("Stats = %+v, want %d incoming and %d outgoing drops, 1 client", s, extra+1, extra)
	}
	// The first packets of each queue's size are the ones kept, in order.
	var buf [10]byte
	for i := range QueueSize {
		n, _, err := conn.ReadFrom(buf[:])
		if err != nil || n != 1 || buf[0] != byte(i) {
			t.Fatalf("incoming %d: (%x, %v)", i, buf[:n], err)
		}
	}
	q := conn.OutgoingQueue(intAddr(2))
	for i := range OutgoingQueueSize {
		if p := <-q; len(p) != 1 || p[0] != byte(i) {
			t.Fatalf("outgoing %d: %x", i, p)
		}
	}
}

func TestUnsupportedAddr(t *testing.T) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	defer conn.Close()
	for _, addr := range []net.Addr{nil, sliceAddr("x")} {
		if _, err := conn.WriteTo([]byte("x"), addr); !errors.Is(err, ErrUnsupportedAddr) {
			t.Errorf("WriteTo(%#v) error %v, want ErrUnsupportedAddr", addr, err)
		}
		if _, ok := <-conn.OutgoingQueue(addr); ok {
			t.Errorf("OutgoingQueue(%#v) is not closed", addr)
		}
	}
	if s := conn.Stats(); s.Clients != 0 {
		t.Errorf("Clients = %d", s.Clients)
	}
}

func TestQueuePacketConnClose(t *testing.T) {
	verifyNoLeaks(t)
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	q := conn.OutgoingQueue(intAddr(1))
	if _, err := conn.WriteTo([]byte("queued"), intAddr(1)); err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error)
	go func() {
		var buf [10]byte
		_, _, err := conn.ReadFrom(buf[:])
		readErr <- err
	}()
	for range 2 {
		if err := conn.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	if err := <-readErr; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("blocked ReadFrom: %v, want net.ErrClosed", err)
	}
	if _, _, err := conn.ReadFrom(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("ReadFrom after Close: %v", err)
	}
	if _, err := conn.WriteTo([]byte("x"), intAddr(1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("WriteTo after Close: %v", err)
	}
	// The queue is closed, but what it held can still be drained.
	if p, ok := <-q; !ok || string(p) != "queued" {
		t.Fatalf("draining closed queue: (%q, %v)", p, ok)
	}
	if _, ok := <-q; ok {
		t.Fatal("queue not closed")
	}
	if _, ok := <-conn.OutgoingQueue(intAddr(2)); ok {
		t.Fatal("OutgoingQueue after Close is not closed")
	}
	conn.QueueIncoming([]byte("x"), intAddr(1)) // dropped, no panic
}

func TestQueuePacketConnReadDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
		defer conn.Close()
		var buf [10]byte

		// A past deadline fails at once, even with a packet queued.
		conn.QueueIncoming([]byte("a"), intAddr(1))
		if err := conn.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := conn.ReadFrom(buf[:]); !isTimeout(err) {
			t.Fatalf("past deadline: %v", err)
		}

		// A future deadline ends a blocked read, not before.
		if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
			t.Fatal(err)
		}
		n, _, err := conn.ReadFrom(buf[:]) // the queued packet
		if err != nil || string(buf[:n]) != "a" {
			t.Fatalf("ReadFrom = (%q, %v)", buf[:n], err)
		}
		start := time.Now()
		if _, _, err := conn.ReadFrom(buf[:]); !isTimeout(err) {
			t.Fatalf("blocked read: %v", err)
		}
		if waited := time.Since(start); waited != 5*time.Second {
			t.Fatalf("timed out after %v, want 5s", waited)
		}

		// Moving the deadline wakes a read already blocked.
		if err := conn.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() {
			_, _, err := conn.ReadFrom(buf[:])
			done <- err
		}()
		synctest.Wait()
		if err := conn.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := <-done; !isTimeout(err) {
			t.Fatalf("read blocked before the deadline was set: %v", err)
		}

		// No deadline: reads work again.
		if err := conn.SetReadDeadline(time.Time{}); err != nil {
			t.Fatal(err)
		}
		conn.QueueIncoming([]byte("b"), intAddr(1))
		if n, _, err := conn.ReadFrom(buf[:]); err != nil || string(buf[:n]) != "b" {
			t.Fatalf("ReadFrom after clearing the deadline = (%q, %v)", buf[:n], err)
		}
	})
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestExpiry: idle clients' queues are closed after the timeout (checked
// every timeout/2); using a queue, by WriteTo or OutgoingQueue, keeps it.
func TestExpiry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const timeout = time.Minute
		conn := NewQueuePacketConn(emptyAddr{}, timeout, 500)
		defer conn.Close()

		q1 := conn.OutgoingQueue(intAddr(1))         // t=0
		_, _ = conn.WriteTo([]byte("x"), intAddr(1)) // t=0
		time.Sleep(50 * time.Second)
		_, _ = conn.WriteTo([]byte("y"), intAddr(2)) // t=50
		q3 := conn.OutgoingQueue(intAddr(3))         // t=50
		time.Sleep(20 * time.Second)                 // t=70: the check at t=60 ran
		synctest.Wait()

		if p, ok := <-q1; !ok || string(p) != "x" {
			t.Fatalf("expired queue lost its packet: (%q, %v)", p, ok)
		}
		if _, ok := <-q1; ok {
			t.Fatal("client 1 not expired at t=70")
		}
		if s := conn.Stats(); s.Clients != 2 || s.Expired != 1 {
			t.Fatalf("t=70: Stats = %+v, want 2 clients, 1 expired", s)
		}
		_ = conn.OutgoingQueue(intAddr(3)) // t=70: client 3 stays

		time.Sleep(50 * time.Second) // t=120: checks at 90 and 120 ran
		synctest.Wait()
		select {
		case _, ok := <-q3:
			t.Fatalf("client 3 expired though used at t=70 (ok=%v)", ok)
		default:
		}
		if s := conn.Stats(); s.Clients != 1 || s.Expired != 2 {
			t.Fatalf("t=120: Stats = %+v, want 1 client, 2 expired", s)
		}

		time.Sleep(30 * time.Second) // t=150: check at 150 ran
		synctest.Wait()
		if _, ok := <-q3; ok {
			t.Fatal("client 3 not expired at t=150")
		}
		// A new WriteTo makes a new queue.
		_, _ = conn.WriteTo([]byte("z"), intAddr(1))
		if p := <-conn.OutgoingQueue(intAddr(1)); string(p) != "z" {
			t.Fatalf("new queue: %q", p)
		}
		if s := conn.Stats(); s.Clients != 1 || s.Expired != 3 {
			t.Fatalf("t=150: Stats = %+v, want 1 client, 3 expired", s)
		}
	})
}

// TestExpiryRace: expiry running all the time does not race with senders
// (a send on a closed queue would panic) or with consumers.
func TestExpiryRace(t *testing.T) {
	verifyNoLeaks(t)
	conn := NewQueuePacketConn(emptyAddr{}, time.Nanosecond, 500)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range 5000 {
				if _, err := conn.WriteTo([]byte("x"), intAddr(i%7+g)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range 5000 {
				select {
				case p, ok := <-conn.OutgoingQueue(intAddr(i % 5)):
					if ok {
						conn.Restore(p)
					}
				default:
				}
			}
		}()
	}
	wg.Wait()
	conn.Close()
}

// TestConcurrentConsumers: several consumers of one client's outgoing queue
// share its packets, each packet going to exactly one of them.
func TestConcurrentConsumers(t *testing.T) {
	verifyNoLeaks(t)
	const packets = 5000
	const consumers = 4
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	var id net.Addr = NewClientID()
	var wg sync.WaitGroup
	counts := make([][]int, consumers)
	q := conn.OutgoingQueue(id)
	for c := range consumers {
		counts[c] = make([]int, packets)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				// Hold the queue (rather than calling OutgoingQueue
				// per packet) so that it is drained after Close.
				p, ok := <-q
				if !ok {
					return
				}
				counts[c][binary.BigEndian.Uint32(p)]++
				conn.Restore(p)
			}
		}()
	}
	var buf [4]byte
	for i := range packets {
		binary.BigEndian.PutUint32(buf[:], uint32(i))
		if _, err := conn.WriteTo(buf[:], id); err != nil {
			t.Fatal(err)
		}
	}
	conn.Close() // closes the queue; consumers drain it and end
	wg.Wait()
	received, busy := 0, 0
	for i := range packets {
		total := 0
		for c := range consumers {
			total += counts[c][i]
		}
		if total > 1 {
			t.Fatalf("packet %d received %d times", i, total)
		}
		received += total
	}
	for c := range consumers {
		for _, n := range counts[c] {
			if n > 0 {
				busy++
				break
			}
		}
	}
	if dropped := conn.Stats().OutgoingDropped; uint64(received)+dropped != packets {
		t.Fatalf("received %d + dropped %d != %d", received, dropped, packets)
	}
	t.Logf("%d packets received by %d consumers, %d dropped", received, busy, conn.Stats().OutgoingDropped)
}

// TestOutgoingQueueSharedAcrossCarriers: the relay pattern, two carriers of
// one client draining the same queue, end to end through memCarriers.
func TestOutgoingQueueSharedAcrossCarriers(t *testing.T) {
	verifyNoLeaks(t)
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	var id net.Addr = NewClientID()
	var wg sync.WaitGroup
	c1, c2 := newMemCarrier(), newMemCarrier()
	relayCarrier(&wg, conn, c1.endB(), id)
	relayCarrier(&wg, conn, c2.endB(), id)
	const packets = 100
	for i := range packets {
		if _, err := conn.WriteTo([]byte{byte(i)}, id); err != nil {
			t.Fatal(err)
		}
	}
	seen := make(map[byte]bool)
	perCarrier := [2]int{}
	for len(seen) < packets {
		var b []byte
		select {
		case b = <-c1.toA:
			perCarrier[0]++
		case b = <-c2.toA:
			perCarrier[1]++
		}
		if len(b) != 1 || seen[b[0]] {
			t.Fatalf("packet %x: wrong or seen before", b)
		}
		seen[b[0]] = true
	}
	t.Logf("packets per carrier: %v", perCarrier)
	a1, a2 := c1.endA(), c2.endA()
	a1.Close()
	a2.Close()
	wg.Wait()
	conn.Close()
}

func BenchmarkQueueIncoming(b *testing.B) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 1400)
	defer conn.Close()
	var id net.Addr = NewClientID()
	p := make([]byte, 500)
	buf := make([]byte, 1500)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		conn.QueueIncoming(p, id)
		if _, _, err := conn.ReadFrom(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWriteTo(b *testing.B) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 1400)
	defer conn.Close()
	var id net.Addr = NewClientID()
	q := conn.OutgoingQueue(id)
	p := make([]byte, 500)
	b.ReportAllocs()
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := conn.WriteTo(p, id); err != nil {
			b.Fatal(err)
		}
		conn.Restore(<-q)
	}
}

// BenchmarkSendQueue measures the client-map lookup that every WriteTo and
// OutgoingQueue pays, with many clients and parallel callers.
func BenchmarkSendQueue(b *testing.B) {
	conn := NewQueuePacketConn(emptyAddr{}, time.Hour, 1400)
	defer conn.Close()
	ids := make([]net.Addr, 1000)
	for i := range ids {
		ids[i] = NewClientID()
		conn.OutgoingQueue(ids[i])
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			conn.OutgoingQueue(ids[i%len(ids)])
			i++
		}
	})
}

func TestForget(t *testing.T) {
	c := NewQueuePacketConn(NewClientID(), time.Hour, 0)
	defer c.Close()
	id := NewClientID()
	old := c.OutgoingQueue(id.Addr())
	if _, err := c.WriteTo([]byte("queued"), id.Addr()); err != nil {
		t.Fatal(err)
	}
	c.Forget(id.Addr())
	if _, ok := <-old; ok {
		t.Error("forgotten queue still open or still holds a packet")
	}
	// The client may come back: it gets a new, empty queue.
	if _, err := c.WriteTo([]byte("new"), id.Addr()); err != nil {
		t.Fatal(err)
	}
	if p := <-c.OutgoingQueue(id.Addr()); string(p) != "new" {
		t.Errorf("new queue gave %q", p)
	}
	c.Forget(NewClientID().Addr()) // unknown: nothing happens
}

func TestDrain(t *testing.T) {
	c := NewQueuePacketConn(NewClientID(), time.Hour, 0)
	defer c.Close()
	id := NewClientID()
	queue := c.OutgoingQueue(id.Addr())
	for _, p := range []string{"stale", "stale too"} {
		if _, err := c.WriteTo([]byte(p), id.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	if n := c.Drain(id.Addr()); n != 2 {
		t.Errorf("Drain = %d; want 2", n)
	}
	// The queue stays: what is written next reaches its consumer.
	if _, err := c.WriteTo([]byte("fresh"), id.Addr()); err != nil {
		t.Fatal(err)
	}
	if p := <-queue; string(p) != "fresh" {
		t.Errorf("after Drain the queue gave %q", p)
	}
	if n := c.Drain(NewClientID().Addr()); n != 0 {
		t.Errorf("Drain of an unknown client = %d", n)
	}
}
