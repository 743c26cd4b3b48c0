package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	kcp "github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// shardAddr is the local address of a shard's packet conn.
type shardAddr int

func (a shardAddr) Network() string { return "turbotunnel" }
func (a shardAddr) String() string  { return fmt.Sprintf("turbotunnel-%d", int(a)) }

// A shard is one KCP state machine: a QueuePacketConn that carriers feed,
// and the KCP listener that reads it. Each ClientID belongs to one shard.
type shard struct {
	pconn  *turbotunnel.QueuePacketConn
	ln     *kcp.Listener
	silent silentSet // ClientIDs whose packets are dropped: see abandon.go
	// filters hold back resends before they are queued: see resend.go.
	filters resendFilters
}

func newShard(r *Relay, i int) (*shard, error) {
	pconn := turbotunnel.NewQueuePacketConn(shardAddr(i), r.cfg.ClientTimeout, turbotunnel.MTU)
	s := &shard{pconn: pconn}
	ln, err := kcp.ServeConn(nil, 0, 0, shardConn{pconn, &s.silent, &r.stats.silentDrops, &s.filters, &r.stats.resendsHeld})
	if err != nil {
		pconn.Close()
		return nil, fmt.Errorf("start kcp: %w", err)
	}
	s.ln = ln
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		s.acceptLoop(r)
	}()
	return s, nil
}

func (s *shard) close() {
	s.ln.Close()
	s.pconn.Close()
}

func (s *shard) acceptLoop(r *Relay) {
	for {
		conn, err := s.ln.AcceptKCP()
		if err != nil {
			select {
			case <-r.closing:
			default:
				r.log.Warn("kcp accept stopped", "err", err)
			}
			return
		}
		id, ok := turbotunnel.ClientIDFromAddr(conn.RemoteAddr())
		if !ok {
			conn.Close()
			continue
		}
		turbotunnel.ConfigureKCP(conn)
		if !r.sessionRoom() {
			// Admitted carriers raced past the cap.
			r.stats.refuse(refuseGlobal)
			conn.Close()
			continue
		}
		conn.SetWindowSize(initialSendWindow, 0)
		conn.SetNoDelay(-1, busyInterval, -1, -1) // see sendwindow.go
		sess := &session{id: id, kcp: conn, window: newSendWindow()}
		addr, ok := r.startSession(sess)
		if !ok {
			conn.Close()
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer r.endSession(sess)
			sess.serve(r, addr)
		}()
	}
}

// A session is one client's KCP session and the smux session over it.
type session struct {
	id  turbotunnel.ClientID
	kcp *kcp.UDPSession

	opened atomic.Bool // a stream was accepted
	window *sendWindow // see sendwindow.go
	// resend is its ClientID's resend filter (resend.go), set by
	// startSession before the window goroutine sees the session.
	resend *resendFilter

	mu      sync.Mutex
	smux    *smux.Session // guarded by mu; nil until started
	done    bool          // guarded by mu
	reclaim *time.Timer   // guarded by mu; see armReclaim

	// Guarded by Relay.mu; see abandon.go.
	lostGen   uint64      // counts starts and ends of absences
	lostTimer *time.Timer // runs while the ClientID has no carrier
	silent    bool        // packets are dropped, the send window is 1
}

func (s *session) close() {
	s.mu.Lock()
	s.done = true
	m := s.smux
	if s.reclaim != nil {
		s.reclaim.Stop()
	}
	s.mu.Unlock()
	if m != nil {
		m.Close()
	}
	s.kcp.Close()
}

func (s *session) serve(r *Relay, addr netip.Addr) {
	defer s.kcp.Close()
	r.stats.sessionsTotal.Add(1)
	r.stats.sessionsActive.Add(1)
	defer r.stats.sessionsActive.Add(-1)

	m, err := smux.Server(s.kcp, turbotunnel.RelaySmuxConfig())
	if err != nil {
		r.log.Warn("smux server", "err", err)
		return
	}
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		m.Close()
		return
	}
	s.smux = m
	s.mu.Unlock()
	defer m.Close()
	r.armReclaim(s)
	defer func() {
		s.mu.Lock()
		s.done = true
		s.reclaim.Stop()
		s.mu.Unlock()
	}()

	for {
		stream, err := m.AcceptStream()
		if err != nil {
			return
		}
		s.opened.Store(true)
		r.stats.streamsTotal.Add(1)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.stats.streamsActive.Add(1)
			defer r.stats.streamsActive.Add(-1)
			r.forward(stream, addr, s.window)
		}()
	}
}

// forward connects stream to its target and copies both ways until both
// directions end.
func (r *Relay) forward(stream *smux.Stream, addr netip.Addr, w *sendWindow) {
	defer stream.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.DialTimeout)
	stop := make(chan struct{})
	go func() {
		select {
		case <-r.closing:
			cancel()
		case <-stop:
		}
	}()
	target, err := r.cfg.Dial(ctx, addr)
	close(stop)
	cancel()
	if err != nil {
		r.stats.dialFailures.Add(1)
		r.log.Warn("cannot reach target", "err", err)
		return
	}
	defer target.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		// target -> client
		err := copyToStream(stream, target, &r.pools.copies, &r.stats, &w.sent)
		if err == nil {
			// The target finished sending: pass the half-close on.
			stream.CloseWrite()
		} else {
			stream.Close()
			target.Close()
		}
	}()
	// client -> target: smux's WriteTo hands its buffers to the target
	// directly, no copy buffer needed.
	_, err = stream.WriteTo(countingWriter{target, &r.stats, &w.received})
	if err == nil || errors.Is(err, io.EOF) {
		if cw, ok := target.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		} else {
			target.Close()
		}
	} else {
		stream.Close()
		target.Close()
	}
	<-done
}

// countingWriter counts upstream bytes as they are written, for the
// relay and for the session.
type countingWriter struct {
	w       io.Writer
	stats   *counters
	session *atomic.Uint64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.stats.streamUp.Add(uint64(n))
	c.session.Add(uint64(n))
	return n, err
}

// copyBufferSize is the size of the pooled buffers used to read from
// targets. A buffer is held only during one read and one write (which
// waits while the session's send window is full: a download holds one all
// the time), never while the target is idle, so its size costs nothing per
// idle stream. 32 KiB reads take what a fast target has sent in one system
// call and one smux frame: with 16 KiB ones a loaded relay made half again
// as many reads per MB; 64 KiB ones saved a few more reads for 10 MB more
// heap with 100 downloads (docs/performance.md, "Many users").
const copyBufferSize = 32 << 10

// firstReadSize caps a stream's first read from its target. A client hands
// the application nothing of a smux frame until the whole frame is in, and
// a path in slow start delivers only some 15 KiB in its first round trip:
// a response's first 32 KiB read in one (a server's headers with the start
// of the body) reached the application a whole round trip later than its
// first 4 KiB alone (0.19 s on a 150 ms path). Later reads take the full
// buffer.
const firstReadSize = 4 << 10

// copyToStream copies src to dst (the client's smux stream) until EOF (nil
// error) or an error. When src is a socket, it waits for readability without
// holding a buffer and reads with a pooled one, so an idle stream holds no
// copy buffer, and it allocates nothing per read (TestCopyToStreamAllocs).
//
// A buffer whose Write failed is left to the garbage collector, never put
// back: smux's Write returns on a deadline or a closing session while its
// frame, which points into the buffer, may still sit in the session's send
// queue, and the send loop may copy from it later.
func copyToStream(dst io.Writer, src net.Conn, pool *sync.Pool, stats *counters, sent *atomic.Uint64) error {
	sc, ok := src.(syscall.Conn)
	if !ok {
		return copyBuffered(dst, src, pool, stats, sent)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return copyBuffered(dst, src, pool, stats, sent)
	}
	// The read function and what it sets are made once per stream, not
	// once per read: a closure passed to rc.Read escapes, and so do the
	// variables it captures.
	var (
		bp    *[]byte
		n     int
		rerr  error
		limit = firstReadSize
	)
	read := func(fd uintptr) bool {
		bp = pool.Get().(*[]byte)
		n, rerr = syscall.Read(int(fd), (*bp)[:min(limit, len(*bp))])
		if rerr == syscall.EAGAIN || rerr == syscall.EINTR {
			pool.Put(bp)
			bp = nil
			return false // wait until readable, then call again
		}
		return true
	}
	for {
		bp, n, rerr = nil, 0, nil
		err := rc.Read(read)
		if err == nil {
			err = rerr
		}
		if err != nil {
			if bp != nil {
				pool.Put(bp)
			}
			return err
		}
		if n == 0 {
			pool.Put(bp)
			return nil // EOF
		}
		limit = copyBufferSize
		if _, werr := dst.Write((*bp)[:n]); werr != nil {
			// Not back to the pool: see above.
			return werr
		}
		pool.Put(bp)
		stats.streamDown.Add(uint64(n))
		sent.Add(uint64(n))
	}
}

// copyBuffered is copyToStream for connections that are not sockets.
func copyBuffered(dst io.Writer, src io.Reader, pool *sync.Pool, stats *counters, sent *atomic.Uint64) error {
	bp := pool.Get().(*[]byte)
	buf := *bp
	limit := firstReadSize
	for {
		n, err := src.Read(buf[:min(limit, len(buf))])
		if n > 0 {
			limit = len(buf)
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return werr // bp is not put back: see copyToStream
			}
			stats.streamDown.Add(uint64(n))
			sent.Add(uint64(n))
		}
		if errors.Is(err, io.EOF) {
			pool.Put(bp)
			return nil
		}
		if err != nil {
			pool.Put(bp)
			return err
		}
	}
}

// queueDrops sums the turbotunnel queue drop counters of all shards.
func (r *Relay) queueDrops() uint64 {
	var total uint64
	for _, s := range r.shards {
		st := s.pconn.Stats()
		total += st.IncomingDropped + st.OutgoingDropped
	}
	return total
}
