package turbotunnel

import (
	"bytes"
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

// tuneKCP applies Snowflake's KCP settings (both sides) and the hang guard.
func tuneKCP(s *kcp.UDPSession) {
	ConfigureKCP(s)
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

// echoRoundTrip writes size random bytes on sess while reading them back,
// and checks that they come back intact.
func echoRoundTrip(tb testing.TB, sess *kcp.UDPSession, size int) {
	tb.Helper()
	data := make([]byte, size)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	errc := make(chan error, 1)
	go func() {
		for p := data; len(p) > 0; {
			n := min(len(p), 8192)
			if _, err := sess.Write(p[:n]); err != nil {
				errc <- err
				return
			}
			p = p[n:]
		}
		errc <- nil
	}()
	got := make([]byte, size)
	if _, err := io.ReadFull(sess, got); err != nil {
		tb.Fatalf("reading: %v", err)
	}
	if err := <-errc; err != nil {
		tb.Fatalf("writing: %v", err)
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
	echoRoundTrip(t, sess, 256<<10)
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
