package turbotunnel

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/xtaci/kcp-go/v5"
)

// hangGuard bounds how long a KCP test may block; it is not used to
// synchronise anything.
const hangGuard = 30 * time.Second

// tuneKCP applies Snowflake's KCP settings (both sides).
func tuneKCP(s *kcp.UDPSession) {
	//lint:ignore SA1019 stream mode is part of Snowflake's KCP parameters (kcp-go marks it deprecated but keeps it)
	s.SetStreamMode(true)
	s.SetWindowSize(65535, 65535)
	s.SetNoDelay(0, 0, 0, 1)
	_ = s.SetDeadline(time.Now().Add(hangGuard))
}

// echoServer runs kcp.ServeConn over server and echoes the first accepted
// session; stop closes everything it started and waits for it.
func echoServer(tb testing.TB, server *QueuePacketConn) (stop func()) {
	tb.Helper()
	ln, err := kcp.ServeConn(nil, 0, 0, server)
	if err != nil {
		tb.Fatal(err)
	}
	var wg sync.WaitGroup
	sessCh := make(chan *kcp.UDPSession, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		sess, err := ln.AcceptKCP()
		if err != nil {
			return
		}
		tuneKCP(sess)
		sessCh <- sess
		_, _ = io.Copy(sess, sess)
	}()
	return func() {
		select {
		case sess := <-sessCh:
			sess.Close()
		default:
		}
		ln.Close()
		server.Close() // ends the listener's reader and the accept
		wg.Wait()
	}
}

// echoRoundTrip writes size random bytes on sess in two halves and reads
// them back. between (if not nil) runs after the first half has come back
// and before the second is written; during (if not nil) runs as soon as the
// second half is being written, so that it can disturb packets in flight.
func echoRoundTrip(tb testing.TB, sess *kcp.UDPSession, size int, between, during func()) {
	tb.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	write := func(p []byte) <-chan error {
		errc := make(chan error, 1)
		go func() {
			for len(p) > 0 {
				n := min(len(p), 8192)
				if _, err := sess.Write(p[:n]); err != nil {
					errc <- err
					return
				}
				p = p[n:]
			}
			errc <- nil
		}()
		return errc
	}
	got := make([]byte, size)
	half := size / 2
	for i, part := range [][2]int{{0, half}, {half, size}} {
		if i == 1 && between != nil {
			between()
		}
		errc := write(data[part[0]:part[1]])
		if i == 1 && during != nil {
			during()
		}
		if _, err := io.ReadFull(sess, got[part[0]:part[1]]); err != nil {
			tb.Fatalf("reading bytes %d to %d: %v", part[0], part[1], err)
		}
		if err := <-errc; err != nil {
			tb.Fatalf("writing: %v", err)
		}
	}
	if !bytes.Equal(got, data) {
		i := 0
		for got[i] == data[i] {
			i++
		}
		tb.Fatalf("echoed data differs from offset %d", i)
	}
}

// TestKCPOverQueuePacketConn runs a real kcp-go session between a client
// PacketConn and a QueuePacketConn (kcp.ServeConn, block=nil), in memory,
// and checks that the stream survives intact: no buffer aliasing between
// kcp-go's pooled buffers and ours.
func TestKCPOverQueuePacketConn(t *testing.T) {
	verifyNoLeaks(t)
	server := NewQueuePacketConn(intAddr(0), time.Minute, 1400)
	stop := echoServer(t, server)
	defer stop()

	client := newDirectPacketConn(server, NewClientID())
	defer client.Close()
	sess, err := kcp.NewConn2(server.LocalAddr(), nil, 0, 0, client)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tuneKCP(sess)
	echoRoundTrip(t, sess, 256<<10, nil, nil)
}

// TestKCPOverRedialPacketConn is the turbotunnel path end to end: KCP over
// a RedialPacketConn whose carriers reach a QueuePacketConn through
// relay-style forwarders. Carriers are killed mid-stream; the session
// carries on over the next ones, data intact.
func TestKCPOverRedialPacketConn(t *testing.T) {
	verifyNoLeaks(t)
	server := NewQueuePacketConn(intAddr(0), time.Minute, 1400)
	stop := echoServer(t, server)
	defer stop()

	var relays sync.WaitGroup
	defer relays.Wait()
	var id net.Addr = NewClientID()
	carriers := make(chan *memCarrier, 16)
	dials := 0
	dial := func(ctx context.Context) (net.PacketConn, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		dials++
		m := newMemCarrier()
		if dials == 2 {
			// The second carrier dies on the client's 10th packet,
			// in the middle of the second half.
			m.killAfterA = 10
		}
		relayCarrier(&relays, server, m.endB(), id)
		select {
		case carriers <- m:
		default: // the test only kills the first few
		}
		return m.endA(), nil
	}
	client := NewRedialPacketConn(intAddr(1), server.LocalAddr(), dial)
	defer client.Close()
	sess, err := kcp.NewConn2(server.LocalAddr(), nil, 0, 0, client)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	tuneKCP(sess)

	retransBefore := kcp.DefaultSnmp.Copy().RetransSegs
	first := <-carriers
	echoRoundTrip(t, sess, 256<<10, func() {
		// Between the halves: the second half can only travel on
		// later carriers.
		first.kill()
	}, nil)
	if s := client.Stats(); s.Dials < 3 {
		t.Fatalf("Dials = %d, want at least 3", s.Dials)
	}
	// Packets were lost with the second carrier and sent again.
	if kcp.DefaultSnmp.Copy().RetransSegs == retransBefore {
		t.Fatal("KCP retransmitted nothing: no packet was lost in flight")
	}
	snmp := kcp.DefaultSnmp.Copy()
	t.Logf("client %+v, server %+v; kcp retransmitted %d segments (%d fast, %d early)", client.Stats(), server.Stats(), snmp.RetransSegs, snmp.FastRetransSegs, snmp.EarlyRetransSegs)
}

// transcriptPacketConn records a copy of every packet kcp-go writes before
// passing it to a QueuePacketConn; its ReadFrom blocks until Close.
type transcriptPacketConn struct {
	inner      *QueuePacketConn
	mu         sync.Mutex
	transcript [][]byte // guarded by mu
	closed     chan struct{}
	once       sync.Once
}

func (c *transcriptPacketConn) WriteTo(p []byte, addr net.Addr) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.transcript = append(c.transcript, bytes.Clone(p))
	return c.inner.WriteTo(p, addr)
}

func (c *transcriptPacketConn) first() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.transcript[0]
}

func (c *transcriptPacketConn) ReadFrom([]byte) (int, net.Addr, error) {
	<-c.closed
	return 0, nil, net.ErrClosed
}

func (c *transcriptPacketConn) Close() error                     { c.once.Do(func() { close(c.closed) }); return nil }
func (c *transcriptPacketConn) LocalAddr() net.Addr              { return emptyAddr{} }
func (c *transcriptPacketConn) SetDeadline(time.Time) error      { return nil }
func (c *transcriptPacketConn) SetReadDeadline(time.Time) error  { return nil }
func (c *transcriptPacketConn) SetWriteDeadline(time.Time) error { return nil }

// TestQueuePacketConnWriteToKCP is Snowflake's test for issue 40260: kcp-go
// passes WriteTo a buffer from its pool and reuses it afterwards. While other
// KCP sessions churn that pool, a queued packet must not change. Instead of
// sleeping, the test lets the churn run a fixed number of sessions between
// the send and the check.
func TestQueuePacketConnWriteToKCP(t *testing.T) {
	verifyNoLeaks(t)
	churnReq := make(chan int)
	churnDone := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for n := range churnReq {
			for range n {
				// A session that sends "XXXX" once, then goes.
				pconn := newDiscardCarrier()
				sess, err := kcp.NewConn4(0, intAddr(2), nil, 0, 0, true, pconn)
				if err != nil {
					t.Error(err)
					return
				}
				_, _ = sess.Write([]byte("XXXX"))
				sess.Close() // closes pconn, ending the session's reader
			}
			churnDone <- struct{}{}
		}
	}()
	defer wg.Wait()
	defer close(churnReq)

	server := NewQueuePacketConn(emptyAddr{}, time.Hour, 500)
	defer server.Close()
	for i := range 10 {
		addr := intAddr(100 + i)
		outgoing := server.OutgoingQueue(addr)
		transcript := &transcriptPacketConn{inner: server, closed: make(chan struct{})}
		sess, err := kcp.NewConn2(addr, nil, 0, 0, transcript)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Write([]byte("hello world")); err != nil {
			t.Fatal(err)
		}
		var p []byte
		select {
		case p = <-outgoing:
		case <-time.After(hangGuard):
			t.Fatal("no packet sent")
		}
		churnReq <- 50
		<-churnDone
		if want := transcript.first(); !bytes.Equal(p, want) {
			t.Fatalf("session %d: packet changed between send and receive\nsent: %q\nrecv: %q", i, want, p)
		}
		sess.Close()
		transcript.Close()
	}
}
