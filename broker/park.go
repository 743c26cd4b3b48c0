package broker

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/messages"
)

// Parked polls: a proxy poll that waits without net/http (see
// Broker.Listener). Its life, all in one goroutine (run) after the handler
// hijacked the connection:
//
//	poll:  one-byte reads on the bare connection until the read deadline
//	       (the end of the hold, or now when Proxy.Wake or Shutdown fires);
//	       EOF or an error = the proxy left
//	write: End (offer or no match), one Write of the whole response
//	idle:  one-byte read until the next request's first byte (hand the
//	       connection back to the listener, the byte replayed), the
//	       server's idle timeout, EOF or Shutdown (close)
//
// Wake and Shutdown may fire at any time: they set a flag and move the read
// deadline into the past, under parked.mu and only while a read of this
// phase is allowed, so that no deadline of theirs ever lands on a
// connection that has moved on.
const (
	// parkWriteTimeout bounds the write of a parked poll's response.
	parkWriteTimeout = 10 * time.Second
	// maxReplay is how many bytes a parked connection may receive before
	// its response (a pipelined request) and still be handed back; a peer
	// that sends more is dropped.
	maxReplay = 4 << 10
)

// Response header values shared by net/http responses and parked ones.
const (
	corsOrigin  = "*"
	corsHeaders = "Origin, X-Session-ID"
	textPlain   = "text/plain; charset=utf-8"
)

// parkedHead is the start of a parked poll's response: the header lines
// net/http writes for b.write (sorted), up to Date.
const parkedHead = "HTTP/1.1 200 OK\r\n" +
	"Access-Control-Allow-Headers: " + corsHeaders + "\r\n" +
	"Access-Control-Allow-Origin: " + corsOrigin + "\r\n" +
	"Content-Type: " + textPlain + "\r\n"

// aLongTimeAgo is a read deadline that makes a blocked read return at once.
var aLongTimeAgo = time.Unix(1, 0)

// phase of a parked poll, guarded by parked.mu.
type phase uint8

const (
	phaseStarting phase = iota // enqueued, not reading yet
	phasePoll                  // reading until the hold ends or a wake
	phaseBusy                  // writing, or finished reading
	phaseIdle                  // reading for the next request
)

// parked is one parked proxy poll and, after its response, the idle
// connection it came on.
type parked struct {
	b     *Broker
	p     *matcher.Proxy
	ev    event.Proxy
	start time.Time     // the request's arrival, for its duration
	idle  time.Duration // keep-alive wait after the response; 0 = none
	one   [1]byte       // read buffer

	// Set by hijack, then owned by run.
	conn       net.Conn  // the hijacked connection: *parkConn, *tls.Conn or other
	pc         *parkConn // conn's parkConn, nil if none (then closeAfter)
	raw        net.Conn  // what the watcher reads: pc.Conn, or conn
	closeAfter bool      // close instead of handing back

	mu       sync.Mutex
	ph       phase // guarded by mu
	woken    bool  // guarded by mu: Wake or Shutdown fired
	shutdown bool  // guarded by mu: Shutdown fired

	prev, next *parked // in Broker.parks, guarded by parkSet.mu
}

// parkSet is the set of a broker's parked polls and idle connections.
type parkSet struct {
	mu     sync.Mutex
	closed bool
	head   *parked
	wg     sync.WaitGroup
}

// add registers pk, or reports false after close.
func (s *parkSet) add(pk *parked) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	pk.next = s.head
	if s.head != nil {
		s.head.prev = pk
	}
	s.head = pk
	s.wg.Add(1)
	return true
}

// remove unregisters pk, which must have been added.
func (s *parkSet) remove(pk *parked) {
	s.mu.Lock()
	if pk.prev != nil {
		pk.prev.next = pk.next
	} else {
		s.head = pk.next
	}
	if pk.next != nil {
		pk.next.prev = pk.prev
	}
	pk.prev, pk.next = nil, nil
	s.mu.Unlock()
	s.wg.Done()
}

// close refuses new entries and interrupts every registered one, marking
// it shut down (its response says "Connection: close"); wait waits until
// all have finished.
func (s *parkSet) close() {
	s.mu.Lock()
	s.closed = true
	for pk := s.head; pk != nil; pk = pk.next {
		pk.interrupt(true)
	}
	s.mu.Unlock()
}

func (s *parkSet) wait() { s.wg.Wait() }

// parkable reports whether r's poll may be parked: an HTTP/1.1 request
// that keeps its connection, on a connection from one of b's listeners,
// served by an http.Server (whose idle timeout it returns).
func (b *Broker) parkable(r *http.Request) (idle time.Duration, ok bool) {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close {
		return 0, false
	}
	ctx := r.Context()
	if la, ok := ctx.Value(http.LocalAddrContextKey).(parkAddr); !ok || la.l.b != b {
		return 0, false
	}
	srv, ok := ctx.Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return 0, false
	}
	return idleTimeout(srv), true
}

// park parks the enqueued, still waiting poll p until holdEnd. It reports
// false if it cannot (b is shutting down, p was just matched, the
// connection cannot be hijacked): the handler then waits as usual.
func (b *Broker) park(w http.ResponseWriter, p *matcher.Proxy, ev event.Proxy, start, holdEnd time.Time, idle time.Duration) bool {
	pk := &parked{b: b, p: p, ev: ev, start: start, idle: idle}
	if !b.parks.add(pk) {
		return false
	}
	if !b.match.Notify(p, pk.wake) || !pk.hijack(w, holdEnd) {
		b.parks.remove(pk)
		return false
	}
	go pk.run()
	return true
}

// idleTimeout is how long net/http would keep srv's idle connections.
func idleTimeout(srv *http.Server) time.Duration {
	d := srv.IdleTimeout
	if d == 0 {
		d = srv.ReadTimeout
	}
	return max(d, 0)
}

// hijack takes the poll's connection from net/http and sets the read
// deadline to holdEnd.
func (pk *parked) hijack(w http.ResponseWriter, holdEnd time.Time) bool {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	pk.conn, pk.raw = conn, conn
	switch c := conn.(type) {
	case *parkConn:
		pk.pc = c
	case *tls.Conn:
		pk.pc, _ = c.NetConn().(*parkConn)
		if pk.pc != nil && pk.pc.l.tls == nil {
			pk.pc = nil // TLS done by the server (ServeTLS): not ours to hand back
		}
	}
	if pk.pc == nil {
		pk.closeAfter = true // wrapped by someone else: cannot hand it back
	} else {
		pk.raw = pk.pc.Conn
	}
	// Bytes net/http read beyond the request (a pipelined request): a
	// plain connection replays them; above TLS they cannot be put back.
	if n := rw.Reader.Buffered(); n > 0 {
		if _, isTLS := conn.(*tls.Conn); isTLS || pk.pc == nil || n > maxReplay {
			pk.closeAfter = true
		} else {
			buf, _ := rw.Reader.Peek(n)
			pk.pc.replay = append(pk.pc.replay, buf...)
		}
	}
	// rw (net/http's buffers) is dropped here.
	pk.mu.Lock()
	if !pk.woken {
		_ = pk.raw.SetReadDeadline(holdEnd)
		pk.ph = phasePoll
	}
	pk.mu.Unlock()
	return true
}

// wake is the poll's Notify function: a client took it or the matcher
// closed.
func (pk *parked) wake() { pk.interrupt(false) }

// interrupt makes the current read return now. shutdown also keeps the
// connection from being handed back.
func (pk *parked) interrupt(shutdown bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.woken = true
	if shutdown {
		pk.shutdown = true
	}
	if pk.ph == phasePoll || (shutdown && pk.ph == phaseIdle) {
		_ = pk.raw.SetReadDeadline(aLongTimeAgo)
	}
}

// setPhase moves to ph and reports whether Shutdown has fired.
func (pk *parked) setPhase(ph phase) (shutdown bool) {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	pk.ph = ph
	return pk.shutdown
}

// run is the parked poll's goroutine.
func (pk *parked) run() {
	b := pk.b
	defer b.parks.remove(pk)
	pk.mu.Lock()
	polling := pk.ph == phasePoll
	pk.mu.Unlock()
	gone := polling && pk.watch()
	shutdown := pk.setPhase(phaseBusy)
	if gone {
		// A match made meanwhile never reaches the proxy: its client
		// tries another proxy.
		_ = b.match.Abandon(pk.p, errProxyGone)
		pk.ended(event.ProxyGone)
		pk.conn.Close()
		return
	}
	closeConn := shutdown || pk.closeAfter
	if !pk.respond(closeConn) || closeConn || !pk.awaitNext() {
		pk.conn.Close()
		return
	}
	_ = pk.raw.SetDeadline(time.Time{})
	pk.pc.l.handBack(pk.conn)
}

// ended records the end of the poll, as the handler of a poll that is not
// parked does before its response goes out.
func (pk *parked) ended(o event.ProxyOutcome) {
	pk.b.sink.ProxyPollEnded(pk.ev, o)
	pk.b.stats.ObserveRequest(stats.EndpointProxy, time.Since(pk.start))
}

// errProxyGone is the cause given to Matcher.Abandon.
var errProxyGone = errors.New("proxy connection closed")

// watch reads until the read deadline (false) or until the proxy leaves
// or sends more than maxReplay bytes (true).
func (pk *parked) watch() (gone bool) {
	for {
		n, err := pk.raw.Read(pk.one[:])
		if n > 0 && !pk.keep() {
			return true
		}
		if err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// keep saves the byte just read for the HTTP server, or reports false if
// it cannot.
func (pk *parked) keep() bool {
	if pk.closeAfter {
		return true // nobody will read it; only disconnects matter
	}
	if len(pk.pc.replay) >= maxReplay {
		return false
	}
	pk.pc.replay = append(pk.pc.replay, pk.one[0])
	return true
}

// respond ends the poll in the matcher, records it and writes its
// response. It reports whether the write succeeded; if it failed after a
// match, the client is released to try another proxy.
func (pk *parked) respond(closeConn bool) bool {
	b := pk.b
	offer, err := b.match.End(pk.p)
	matched := err == nil
	pl := b.pools[poolIndex(pk.p.NAT)].Load()
	body, outcome := pl.noMatch, event.ProxyIdle
	if matched {
		body, outcome = b.matchResponse(offer, pl), event.ProxyMatched
		if body == nil { // cannot happen, see matchResponse
			_ = b.match.Abandon(pk.p, errProxyGone)
			pk.ended(event.ProxyGone)
			return false
		}
	}
	pk.ended(outcome)
	bufp := b.bufs.Get().(*[]byte)
	msg := appendParkedResponse((*bufp)[:0], body, closeConn, time.Now())
	_ = pk.conn.SetWriteDeadline(time.Now().Add(parkWriteTimeout))
	_, err = pk.conn.Write(msg)
	*bufp = msg
	b.putBuf(bufp)
	if err != nil && matched {
		_ = b.match.Abandon(pk.p, errProxyGone)
	}
	return err == nil
}

// awaitNext waits, as net/http does between requests, for the first byte
// of the connection's next request, unless one is already there. It
// reports false if the connection is to be closed (idle timeout, EOF,
// Shutdown).
func (pk *parked) awaitNext() bool {
	if len(pk.pc.replay) > 0 {
		return true
	}
	pk.mu.Lock()
	if pk.shutdown {
		pk.mu.Unlock()
		return false
	}
	var deadline time.Time
	if pk.idle > 0 {
		deadline = time.Now().Add(pk.idle)
	}
	_ = pk.raw.SetReadDeadline(deadline)
	pk.ph = phaseIdle
	pk.mu.Unlock()
	n, _ := pk.raw.Read(pk.one[:])
	if pk.setPhase(phaseBusy) || n == 0 {
		return false
	}
	pk.pc.replay = append(pk.pc.replay, pk.one[0])
	return true
}

// appendParkedResponse appends a 200 response carrying body, with the
// headers b.write sends through net/http, in net/http's order.
func appendParkedResponse(dst, body []byte, closeConn bool, now time.Time) []byte {
	dst = append(dst, parkedHead...)
	if closeConn {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "Date: "...)
	dst = now.UTC().AppendFormat(dst, http.TimeFormat)
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

// matchResponse encodes a "client match" poll response, or returns nil
// (and logs) if it cannot, which cannot happen: the offer was validated on
// the way in and the relay URLs at startup.
func (b *Broker) matchResponse(offer matcher.Offer, pl *pool) []byte {
	resp := messages.ProxyPollResponse{
		Status:   messages.StatusClientMatch,
		Offer:    offer.SDP,
		NAT:      natString(offer.NAT),
		NextPoll: pl.nextPoll,
		RelayURL: b.bridges.At(offer.Bridge).WebSocketAddress,
	}
	body, err := resp.Encode()
	if err != nil {
		b.cfg.Logger.Error("encode proxy match response", "err", err)
		return nil
	}
	return body
}
