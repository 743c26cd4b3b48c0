package broker

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The fast path. On a plain listener served by Serve or Run, a
// connection's requests are first read by the broker itself: a request
// parseFastHead accepts (POST to /proxy, /client or /answer, HTTP/1.1 with
// a Content-Length, no header field but those it knows) is served by the
// same endpoint handlers through a lean http.ResponseWriter that writes,
// in one write, the bytes net/http would have written. Anything else (another path or method, TLS, an
// unknown header field, a malformed or oversized request) goes to net/http
// with every byte read so far, and stays there for the connection's life
// unless a proxy poll parks it again.
//
// What net/http costs per request and the fast path does not: a goroutine
// per connection that outlives its request, 4 KiB read and write buffers,
// the parsed header map, a background read on every request (here only
// while a client's offer waits), a flush per response.
// The fast path keeps one goroutine and one pooled buffer per connection
// while it serves; a parked proxy poll gives both up as before.
//
// Limits: the head at most maxFastHead bytes and maxFastHeaders lines,
// the body at most messages.MaxBodySize; the http.Server's
// ReadHeaderTimeout and ReadTimeout (both from the connection's start for
// its first request, from the first byte for a later one), WriteTimeout
// and IdleTimeout apply as in net/http, and a request handed to net/http
// midway keeps its deadlines; new and handed-back connections pass
// through the listener's admission as they would into net/http. As net/http does, a client's connection is read while its
// offer waits for an answer, so that a client that leaves is noticed.

// fastChunkBuffer is net/http's bufferBeforeChunkingSize: a handler's
// output beyond it, without a Content-Length, is sent chunked.
const fastChunkBuffer = 2048

// fastURLs are the parsed request targets of fastPaths, shared read-only.
var fastURLs = [len(fastPaths)]*url.URL{{Path: fastPaths[0]}, {Path: fastPaths[1]}, {Path: fastPaths[2]}}

// fastNoHeader is the (read-only) header of a request that carries no
// field the handlers read.
var fastNoHeader = http.Header{}

// fastNoBuffer is what Hijack returns for buffers: nothing is buffered,
// the bytes read ahead are in the parkConn's replay.
var fastNoBuffer = bufio.NewReadWriter(bufio.NewReaderSize(strings.NewReader(""), 16), bufio.NewWriterSize(nil, 16))

// fastPath serves a listener's rendezvous requests without net/http.
type fastPath struct {
	l        *listener
	srv      *http.Server // the server of the other requests: its timeouts
	handlers [len(fastPaths)]http.Handler

	returned chan struct{} // signalled when queue grows
	queue    []net.Conn    // handed-back connections; guarded by l.mu

	// spare are fastConns done with, for the next connection: a wave of
	// returning polls reuses a few instead of leaving one each as garbage.
	spare sync.Pool

	mu     sync.Mutex
	closed bool
	conns  map[*fastConn]struct{} // being served
	wg     sync.WaitGroup         // loop and every connection served
}

func newFastPath(l *listener, srv *http.Server) *fastPath {
	f := &fastPath{
		l: l, srv: srv,
		handlers: l.b.rendezvousHandlers(),
		returned: make(chan struct{}, 1),
		conns:    make(map[*fastConn]struct{}),
	}
	f.spare.New = func() any {
		fc := &fastConn{f: f}
		fc.w = fastWriter{fc: fc, header: make(http.Header, 4)}
		return fc
	}
	f.wg.Add(1)
	return f
}

// loop starts serving each new or handed-back connection once it is
// admitted, until the listener closes or fails.
func (f *fastPath) loop() {
	defer f.wg.Done()
	for {
		c, err := f.l.next(&f.queue, f.returned, true)
		if err != nil {
			var te interface{ Temporary() bool }
			if errors.As(err, &te) && te.Temporary() {
				time.Sleep(10 * time.Millisecond) // as net/http would, at first
				continue
			}
			return // Accept reports it to the server
		}
		pc := parkConnOf(c)
		if !f.l.admission.admit(pc, f.l.done) {
			c.Close()
			return
		}
		fc := f.spare.Get().(*fastConn)
		fc.pc, fc.remote = pc, pc.RemoteAddr().String()
		fc.ctx = fastCtx{srv: f.srv, local: any(parkAddr{pc.Conn.LocalAddr(), pc})}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[fc] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go fc.serve()
	}
}

// close closes the connections waiting for a request and waits until
// every connection being served has finished its response; the listener
// has stopped handing out connections.
func (f *fastPath) close() {
	f.mu.Lock()
	f.closed = true
	for fc := range f.conns {
		if fc.reading {
			fc.pc.Close()
		}
	}
	f.mu.Unlock()
	f.wg.Wait()
}

// fastConn is a connection the fast path serves.
type fastConn struct {
	f      *fastPath
	pc     *parkConn
	remote string
	ctx    fastCtx
	body   fastBody
	w      fastWriter
	// leftover is what was read beyond the request being served (a
	// pipelined request): Hijack keeps it in the parkConn's replay.
	leftover []byte
	req      *http.Request // reused for each request
	reading  bool          // blocked in a read; guarded by f.mu
	// peek is a byte serveWatched read (if peeked) of the next request.
	peek   [1]byte
	peeked bool
}

// serve reads and answers requests until the connection is closed, handed
// to net/http or parked.
func (fc *fastConn) serve() {
	f, b := fc.f, fc.f.l.b
	defer f.wg.Done()
	defer fc.recycle()
	bufp := b.bufs.Get().(*[]byte)
	buf := (*bufp)[:0]
	defer func() {
		*bufp = buf
		b.putBuf(bufp)
	}()
	idle := false // waiting for a request after a response
	for {
		req, res, began, ok := fc.readHead(&buf, idle)
		if !ok {
			fc.done(true)
			return
		}
		if res == fastOther {
			fc.toHTTP(buf, began)
			return
		}
		n := req.headLen + req.bodyLen
		if !fc.readBody(&buf, n, began) {
			fc.done(true)
			return
		}
		closeConn, parked := fc.serveRequest(req, buf[req.headLen:n], buf[n:])
		if parked {
			fc.done(false)
			return
		}
		if fc.peeked {
			buf = append(buf, fc.peek[0])
		}
		if closeConn || fc.w.err != nil {
			fc.done(true)
			return
		}
		buf = buf[:copy(buf, buf[n:])]
		idle = true
	}
}

// recycle puts fc, whose connection is no longer its own, back with the
// spares, keeping its header map, request and small buffers.
func (fc *fastConn) recycle() {
	fc.pc, fc.remote, fc.ctx, fc.leftover, fc.peeked = nil, "", fastCtx{}, nil, false
	fc.body.Reset(nil)
	if fc.req != nil {
		fc.req.Header, fc.req.Body = nil, nil
	}
	fc.w.reset()
	if cap(fc.w.pending) > fastChunkBuffer || cap(fc.w.out) > initialBodyBuffer {
		fc.w.pending, fc.w.out = nil, nil
	}
	fc.f.spare.Put(fc)
}

// readHead reads until buf starts with a complete head or one the fast
// path does not take; false if the connection failed, timed out or closed.
// It returns when the request began, from which its timeouts count as
// net/http counts them: the connection's start for its first request
// (idle false), else the request's first byte.
func (fc *fastConn) readHead(bufp *[]byte, idle bool) (req fastRequest, res fastParse, began time.Time, ok bool) {
	srv := fc.f.srv
	if !idle {
		began = time.Now()
	}
	skipped := !idle
	for {
		buf := *bufp
		if len(buf) > 0 {
			if began.IsZero() {
				began = time.Now()
			}
			if !skipped && (len(buf) >= 4 || !isCRorLF(buf[0])) {
				// As net/http after a POST (every request the fast
				// path serves): CR and LF bytes among the next
				// request's first 4 are dropped, for old clients
				// that end a body with a CRLF (RFC 9112, section 2.2).
				k := 0
				for k < min(len(buf), 4) && isCRorLF(buf[k]) {
					k++
				}
				buf = buf[:copy(buf, buf[k:])]
				*bufp, skipped = buf, true
			}
		}
		if len(buf) > 0 && skipped {
			if req, res := parseFastHead(buf); res != fastIncomplete {
				return req, res, began, true
			}
		}
		var deadline time.Time
		if !began.IsZero() {
			if d := readHeaderTimeout(srv); d > 0 {
				deadline = began.Add(d)
			}
		} else if d := idleTimeout(srv); d > 0 {
			deadline = time.Now().Add(d)
		}
		if len(buf) == cap(buf) { // cannot happen: the buffer outgrows maxFastHead
			return fastRequest{}, fastOther, began, true
		}
		if !fc.read(bufp, deadline) {
			return fastRequest{}, 0, began, false
		}
	}
}

func isCRorLF(c byte) bool { return c == '\r' || c == '\n' }

// readHeaderTimeout is how long net/http gives srv's requests for their
// head.
func readHeaderTimeout(srv *http.Server) time.Duration {
	if srv.ReadHeaderTimeout != 0 {
		return srv.ReadHeaderTimeout
	}
	return srv.ReadTimeout
}

// readBody reads until buf holds n bytes, by the server's ReadTimeout
// from when the request began, as net/http; false if the connection
// failed or timed out.
func (fc *fastConn) readBody(bufp *[]byte, n int, began time.Time) bool {
	if n > cap(*bufp) {
		grown := make([]byte, len(*bufp), n)
		copy(grown, *bufp)
		*bufp = grown
	}
	var deadline time.Time
	if d := fc.f.srv.ReadTimeout; d > 0 {
		deadline = began.Add(d)
	}
	for len(*bufp) < n {
		if !fc.read(bufp, deadline) {
			return false
		}
	}
	return true
}

// read reads once into the free space of *bufp; false on an error or
// when the fast path is closing.
func (fc *fastConn) read(bufp *[]byte, deadline time.Time) bool {
	f := fc.f
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return false
	}
	fc.reading = true
	f.mu.Unlock()
	err := fc.pc.SetReadDeadline(deadline)
	buf := *bufp
	var n int
	if err == nil {
		n, err = fc.pc.Read(buf[len(buf):cap(buf)])
	}
	*bufp = buf[:len(buf)+n]
	f.mu.Lock()
	fc.reading = false
	f.mu.Unlock()
	return err == nil
}

// toHTTP hands the connection to net/http with the bytes read so far of
// a request that began at began: net/http's timeouts for it count from
// then (see parkConn.SetReadDeadline), not from the handover.
func (fc *fastConn) toHTTP(buf []byte, began time.Time) {
	fc.pc.replay = append(fc.pc.replay, buf...)
	fc.pc.began = began
	_ = fc.pc.SetDeadline(time.Time{})
	fc.done(false)
	fc.f.l.admission.release(fc.pc)
	fc.f.l.toHTTP(fc.pc)
}

// done forgets the connection, closing it if closeConn.
func (fc *fastConn) done(closeConn bool) {
	fc.f.mu.Lock()
	delete(fc.f.conns, fc)
	fc.f.mu.Unlock()
	if closeConn {
		fc.pc.Close()
	}
}

// serveRequest serves one request through its endpoint's handler and
// sends the response. It reports whether the connection must close, and
// whether the handler parked it (then it is no longer ours).
func (fc *fastConn) serveRequest(req fastRequest, body, leftover []byte) (closeConn, parked bool) {
	f := fc.f
	hdr := fastNoHeader
	if req.nKept > 0 {
		hdr = make(http.Header, req.nKept)
		for _, f := range req.kept[:req.nKept] {
			hdr[f.name] = append(hdr[f.name], string(f.value))
		}
	}
	fc.body.Reset(body)
	fc.leftover, fc.peeked = leftover, false
	// One request per connection (its context is set once): no handler
	// keeps or changes it, and every field they read is set here.
	if fc.req == nil {
		fc.req = new(http.Request).WithContext(&fc.ctx)
	}
	r := fc.req
	r.Method, r.URL, r.RequestURI = http.MethodPost, fastURLs[req.endpoint], fastPaths[req.endpoint]
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.Header, r.Body, r.ContentLength, r.RemoteAddr = hdr, &fc.body, int64(req.bodyLen), fc.remote
	w := &fc.w
	w.reset()
	if fastPaths[req.endpoint] != "/proxy" { // as Handler does
		f.l.admission.release(fc.pc)
	}
	if fastPaths[req.endpoint] == "/client" && len(leftover) == 0 {
		closeConn = fc.serveWatched(f.handlers[req.endpoint], w, r)
	} else {
		f.handlers[req.endpoint].ServeHTTP(w, r)
	}
	f.l.admission.release(fc.pc)
	fc.leftover = nil
	if w.hijacked {
		return false, true
	}
	f.mu.Lock()
	closeConn = closeConn || f.closed
	f.mu.Unlock()
	// As net/http does, a handler that sets Connection: close (a refused
	// request) has the connection closed after its reply.
	closeConn = closeConn || w.header.Get("Connection") == "close"
	w.finish(closeConn)
	return closeConn, false
}

// serveWatched serves a client's offer, which waits for a proxy's answer,
// while reading the connection as net/http does, so that a client that
// leaves cancels the request's context (its proxy's answer is then told
// "client gone"). A byte of a next request read meanwhile is kept in
// fc.peek. It reports whether the client has gone.
func (fc *fastConn) serveWatched(h http.Handler, w http.ResponseWriter, r *http.Request) (gone bool) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	read := make(chan error, 1)
	_ = fc.pc.SetReadDeadline(time.Time{}) // the request's own is over
	go func() {
		n, err := fc.pc.Read(fc.peek[:])
		fc.peeked = n == 1
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			cancel()
		}
		read <- err
	}()
	h.ServeHTTP(w, r.WithContext(ctx))
	_ = fc.pc.SetReadDeadline(time.Unix(1, 0)) // ends the read
	err := <-read
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// fastBody is a request body read in full.
type fastBody struct{ bytes.Reader }

func (*fastBody) Close() error { return nil }

// fastCtx is a fast-path request's context: never cancelled, it carries
// what net/http's would for the handlers (the server and the parkConn).
type fastCtx struct {
	srv   *http.Server
	local any // parkAddr
}

func (*fastCtx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*fastCtx) Done() <-chan struct{}       { return nil }
func (*fastCtx) Err() error                  { return nil }

func (c *fastCtx) Value(key any) any {
	switch key {
	case http.ServerContextKey:
		return c.srv
	case http.LocalAddrContextKey:
		return c.local
	}
	return nil
}

// fastWriter is the fast path's http.ResponseWriter. It writes what
// net/http's would for the same calls: the status line, the handler's
// header fields sorted, then Date, Content-Length, a sniffed Content-Type,
// Connection: close and Transfer-Encoding as net/http adds them, the body
// (chunked past fastChunkBuffer bytes without a Content-Length, or after a
// Flush), all in one write per response or flush.
type fastWriter struct {
	fc     *fastConn
	header http.Header
	status int
	// pending is what the handler wrote and net/http would still hold
	// in its buffer; out is the encoded response not yet sent.
	pending, out []byte
	committed    bool // the header is in out (or sent)
	chunked      bool
	done         bool // the handler returned
	closeConn    bool
	hijacked     bool
	err          error // of the last write to the connection
}

func (w *fastWriter) reset() {
	clear(w.header)
	*w = fastWriter{fc: w.fc, header: w.header, pending: w.pending[:0], out: w.out[:0]}
}

func (w *fastWriter) Header() http.Header { return w.header }

func (w *fastWriter) WriteHeader(code int) {
	if w.status == 0 && !w.committed {
		w.status = code
	}
}

// Write buffers p as net/http's 2 KiB buffer would: what does not fit is
// encoded (committing the header) at the same points.
func (w *fastWriter) Write(p []byte) (int, error) {
	if w.hijacked {
		return 0, http.ErrHijacked
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n := len(p)
	for len(p) > fastChunkBuffer-len(w.pending) {
		if len(w.pending) == 0 {
			w.emit(p)
			return n, nil
		}
		k := fastChunkBuffer - len(w.pending)
		w.pending = append(w.pending, p[:k]...)
		p = p[k:]
		w.emitPending()
	}
	w.pending = append(w.pending, p...)
	return n, nil
}

// FlushError sends what the handler wrote so far (http.ResponseController).
func (w *fastWriter) FlushError() error {
	if w.hijacked {
		return http.ErrHijacked
	}
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.emitPending()
	if !w.committed {
		w.commit(nil)
	}
	return w.send()
}

// Hijack hands the connection to the handler (a parked poll), with what
// was read beyond the request put back for its next read.
func (w *fastWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if w.hijacked || w.committed {
		return nil, nil, http.ErrHijacked
	}
	w.hijacked = true
	pc := w.fc.pc
	pc.replay = append(pc.replay, w.fc.leftover...)
	return pc, fastNoBuffer, nil
}

// finish completes the response once the handler returned, as net/http's
// finishRequest does, and sends it.
func (w *fastWriter) finish(closeConn bool) {
	w.done, w.closeConn = true, closeConn
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if len(w.pending) > 0 {
		w.emitPending()
	} else if !w.committed {
		w.commit(nil)
	}
	if w.chunked {
		w.out = append(w.out, "0\r\n\r\n"...)
	}
	_ = w.send() // a failed write means the peer left: the caller closes
}

func (w *fastWriter) emitPending() {
	if len(w.pending) > 0 {
		w.emit(w.pending)
		w.pending = w.pending[:0]
	}
}

// emit encodes p as net/http's chunkWriter does with its buffer's output.
func (w *fastWriter) emit(p []byte) {
	if !w.committed {
		w.commit(p)
	}
	if !w.chunked {
		w.out = append(w.out, p...)
		return
	}
	w.out = strconv.AppendInt(w.out, int64(len(p)), 16)
	w.out = append(w.out, "\r\n"...)
	w.out = append(w.out, p...)
	w.out = append(w.out, "\r\n"...)
}

// commit encodes the status line and header as net/http's
// chunkWriter.writeHeader does, p being the first output of the body.
func (w *fastWriter) commit(p []byte) {
	w.committed = true
	h := w.header
	bodyAllowed := w.status >= 200 && w.status != http.StatusNoContent && w.status != http.StatusNotModified
	length := -1 // to add
	hasLength := h.Get("Content-Length") != ""
	if w.done && bodyAllowed && !hasLength {
		length = len(p)
		hasLength = true
	}
	contentType := ""
	if _, ok := h["Content-Type"]; !ok && bodyAllowed && len(p) > 0 {
		contentType = http.DetectContentType(p)
	}
	w.chunked = bodyAllowed && !hasLength
	if w.chunked {
		h.Del("Content-Length")
	}
	// The handler's own Connection: close stays where net/http leaves it,
	// among the handler's fields; otherwise it goes after them.
	addClose := w.closeConn && h.Get("Connection") != "close"
	if addClose {
		h.Del("Connection")
	}
	out := append(w.out, "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(w.status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(w.status)...)
	out = append(out, "\r\n"...)
	var keys [8]string
	sorted := keys[:0]
	for k := range h {
		sorted = append(sorted, k)
	}
	for i := 1; i < len(sorted); i++ { // a handful of keys: insertion sort
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	for _, k := range sorted {
		for _, v := range h[k] {
			out = append(out, k...)
			out = append(out, ": "...)
			out = append(out, strings.TrimSpace(v)...)
			out = append(out, "\r\n"...)
		}
	}
	if _, ok := h["Date"]; !ok {
		out = append(out, "Date: "...)
		out = time.Now().UTC().AppendFormat(out, http.TimeFormat)
		out = append(out, "\r\n"...)
	}
	if length >= 0 {
		out = append(out, "Content-Length: "...)
		out = strconv.AppendInt(out, int64(length), 10)
		out = append(out, "\r\n"...)
	}
	if contentType != "" {
		out = append(out, "Content-Type: "+contentType+"\r\n"...)
	}
	if addClose {
		out = append(out, "Connection: close\r\n"...)
	}
	if w.chunked {
		out = append(out, "Transfer-Encoding: chunked\r\n"...)
	}
	w.out = append(out, "\r\n"...)
}

// send writes out to the connection.
func (w *fastWriter) send() error {
	if len(w.out) == 0 || w.err != nil {
		return w.err
	}
	pc := w.fc.pc
	var deadline time.Time
	if d := w.fc.f.srv.WriteTimeout; d > 0 {
		deadline = time.Now().Add(d)
	}
	if w.err = pc.SetWriteDeadline(deadline); w.err == nil {
		_, w.err = pc.Write(w.out)
	}
	w.out = w.out[:0]
	return w.err
}
