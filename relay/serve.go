package relay

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/flurrypt/flurry/internal/httperrlog"
	"github.com/flurrypt/flurry/internal/netaccept"
)

// This file is Serve's listener side: a minimal HTTP/1.1 server for one
// request per connection, the WebSocket upgrade. net/http would give each
// connection a goroutine with 4 KiB bufio reader and writer that a
// hijacking handler turns into garbage; here the request is read through
// a pooled reader and the connection goroutine becomes the carrier's.

const (
	// maxRequestBytes bounds an upgrade request's line and headers.
	maxRequestBytes = 16 << 10
)

// upgradeServer serves one listener for Serve.
type upgradeServer struct {
	r   *Relay
	tls *tls.Config // nil: plain WebSockets

	wg    sync.WaitGroup        // connections not yet handed to a carrier
	mu    sync.Mutex            // guards conns
	conns map[net.Conn]struct{} // connections not yet handed to a carrier
}

// Serve accepts WebSocket carriers on ln until ctx is done or the relay is
// closed, then stops accepting, waits for upgrades under way (bounded by
// ShutdownTimeout, then closes them) and returns. It may be called for
// several listeners at once. It does not close the relay's carriers or
// sessions: call Close for that. Each connection carries one request: a
// WebSocket upgrade, or a request answered with an error and closed.
func (r *Relay) Serve(ctx context.Context, ln net.Listener) error {
	s := &upgradeServer{r: r, conns: make(map[net.Conn]struct{})}
	if r.cfg.TLSConfig != nil {
		s.tls = r.cfg.TLSConfig.Clone()
		if len(s.tls.NextProtos) == 0 {
			// A WebSocket needs HTTP/1.1: never offer h2.
			s.tls.NextProtos = []string{"http/1.1"}
		}
	}
	errc := make(chan error, 1)
	go func() { errc <- s.acceptLoop(ctx, ln) }()
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
	case <-r.closing:
	}
	ln.Close()
	if err == nil {
		if aerr := <-errc; !errors.Is(aerr, net.ErrClosed) {
			err = aerr
		}
	}
	s.drain(r.cfg.ShutdownTimeout)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	select {
	case <-r.closing:
		return ErrClosed
	default:
		return nil
	}
}

// acceptLoop accepts connections until ln fails for good (package
// netaccept) or ctx ends during a pause after a failure.
func (s *upgradeServer) acceptLoop(ctx context.Context, ln net.Listener) error {
	var backoff netaccept.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			if !netaccept.Temporary(err) {
				return err
			}
			s.r.log.Debug("accept failed; retrying", "err", err)
			if !backoff.Wait(ctx) {
				return net.ErrClosed
			}
			continue
		}
		backoff.Reset()
		key, ok := s.r.countAtAccept(c)
		if !ok {
			c.Close()
			continue
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go s.serveConn(c, key)
	}
}

// drain waits for the connections still upgrading, and closes them after
// timeout.
func (s *upgradeServer) drain(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return
	case <-t.C:
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	<-done
}

// serveConn serves one connection: its request, then, if it was a
// carrier's upgrade, the carrier, in this goroutine: a burst of new
// connections then takes one goroutine each, not two.
// counted is the key countAtAccept counted c under, if it did.
func (s *upgradeServer) serveConn(c net.Conn, counted netip.Addr) {
	if carrier := s.readRequest(c, counted); carrier != nil {
		limitUnsent(c)
		carrier.serve()
	}
}

// readRequest reads one request from c within HandshakeTimeout (after the
// TLS handshake, with TLS) and hands it to the relay. It returns the
// carrier the request opened, to be served, or nil once it has answered
// and closed c.
func (s *upgradeServer) readRequest(c net.Conn, counted netip.Addr) (carrier *carrier) {
	hijacked := false
	defer func() {
		// Released before the close, so that the peer, once it sees the
		// close, finds its place free.
		if carrier == nil && counted.IsValid() {
			s.r.conns.removeCarrier(counted)
		}
		if !hijacked {
			c.Close()
		}
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		s.wg.Done()
	}()
	if err := c.SetDeadline(time.Now().Add(s.r.cfg.HandshakeTimeout)); err != nil {
		return nil
	}
	conn := c
	if s.tls != nil {
		tc := tls.Server(c, s.tls)
		if err := tc.Handshake(); err != nil {
			s.r.log.Debug("TLS handshake failed", "reason", httperrlog.HandshakeFailure(err))
			return nil
		}
		conn = tc
	}
	br := s.r.pools.requests.Get().(*bufio.Reader)
	defer func() {
		br.Reset(nil)
		s.r.pools.requests.Put(br)
	}()
	br.Reset(&io.LimitedReader{R: conn, N: maxRequestBytes})
	req, err := http.ReadRequest(br)
	if err != nil {
		if !errors.Is(err, io.EOF) {
			// Not the error: it may quote the request.
			s.r.log.Debug("malformed upgrade request")
			_, _ = io.WriteString(conn, "HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
		}
		return nil
	}
	req.RemoteAddr = c.RemoteAddr().String()
	w := &responseWriter{conn: conn, counted: counted, br: br, header: make(http.Header)}
	carrier = s.r.upgrade(w, req)
	if hijacked = w.hijacked; !hijacked {
		_ = w.finish()
	}
	return carrier
}

// responseWriter is the http.ResponseWriter for one request on a
// connection of Serve's: the response is sent whole when the handler
// returns, unless the handler hijacks the connection.
type responseWriter struct {
	conn     net.Conn
	counted  netip.Addr // the key countAtAccept counted conn under, if it did
	br       *bufio.Reader
	header   http.Header
	status   int
	body     bytes.Buffer
	hijacked bool
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}

func (w *responseWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(p)
}

// Hijack hands the connection over; its reader may hold bytes read ahead.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.hijacked = true
	return w.conn, bufio.NewReadWriter(w.br, nil), nil
}

// finish sends the response and asks the client to close.
func (w *responseWriter) finish() error {
	w.WriteHeader(http.StatusOK)
	w.header.Set("Connection", "close")
	w.header.Set("Content-Length", strconv.Itoa(w.body.Len()))
	var out bytes.Buffer
	fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\n", w.status, http.StatusText(w.status))
	if err := w.header.Write(&out); err != nil {
		return err
	}
	out.WriteString("\r\n")
	out.Write(w.body.Bytes())
	_, err := w.conn.Write(out.Bytes())
	return err
}
