package broker

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/internal/fdwatch"
	"github.com/flurrypt/flurry/messages"
)

// Parked polls: a proxy poll that waits without net/http and without a
// goroutine (see Broker.Listener). After the handler hijacked its
// connection, a parked poll is a parked struct, a timer and a watch on its
// socket (fdwatch: one goroutine for all of them). Its life:
//
//	poll:  the watch reads what arrives (a pipelined request, kept for
//	       the HTTP server) and notices when the proxy leaves; the timer
//	       ends the hold; Proxy.Wake or Close may end it sooner
//	write: a short-lived goroutine ends the poll in the matcher and writes
//	       the whole response at once
//	idle:  the watch waits for the next request's first byte (then the
//	       connection goes back to the listener, unread), the timer for
//	       the server's idle timeout, Close may close it sooner
//
// Each event moves the phase under parked.mu, and only the event that
// leaves a phase acts on it, so that a late timer or watch event does
// nothing.
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

// phase of a parked poll, guarded by parked.mu.
type phase uint8

const (
	phaseStarting phase = iota // enqueued, not watched yet
	phasePoll                  // waiting for a client, the end of the hold or the proxy leaving
	phaseBusy                  // ending: writing, handing back or closing
	phaseIdle                  // waiting for the connection's next request
)

// ending is why a parked poll leaves phasePoll.
type ending uint8

const (
	endAnswer ending = iota // woken, the hold is over or Close: answer
	endGone                 // the proxy left, or sent too much
)

// parked is one parked proxy poll and, after its response, the idle
// connection it came on.
type parked struct {
	b     *Broker
	p     *matcher.Proxy
	ev    event.Proxy
	start time.Time     // the request's arrival, for its duration
	idle  time.Duration // keep-alive wait after the response; 0 = none

	// Set by hijack, before any event can reach them.
	conn       net.Conn       // the hijacked connection: *parkConn or *tls.Conn over one
	pc         *parkConn      // the parkConn at the bottom of conn
	closeAfter bool           // close instead of handing back
	watch      *fdwatch.Watch // on pc's socket
	timer      *time.Timer    // the end of the hold, then of the idle wait

	mu       sync.Mutex
	ph       phase // guarded by mu
	woken    bool  // guarded by mu: Wake fired before phasePoll
	shutdown bool  // guarded by mu: Close fired

	prev, next *parked // in Broker.parks, guarded by parkSet.mu
}

// parkSet is the set of a broker's parked polls and idle connections, and
// the watcher of their sockets.
type parkSet struct {
	mu      sync.Mutex
	closed  bool
	head    *parked
	watcher *fdwatch.Watcher // started with the first parked poll
	wg      sync.WaitGroup
}

// add registers pk and returns the watcher, or nil after close or if
// there can be no watcher (then pk is not added).
func (s *parkSet) add(pk *parked) *fdwatch.Watcher {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	if s.watcher == nil {
		w, err := fdwatch.New()
		if err != nil {
			return nil
		}
		s.watcher = w
	}
	pk.next = s.head
	if s.head != nil {
		s.head.prev = pk
	}
	s.head = pk
	s.wg.Add(1)
	return s.watcher
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
// it shut down (its response says "Connection: close").
func (s *parkSet) close() {
	s.mu.Lock()
	s.closed = true
	var all []*parked
	for pk := s.head; pk != nil; pk = pk.next {
		all = append(all, pk)
	}
	s.mu.Unlock()
	// Outside mu: closing an idle connection removes it from the set.
	for _, pk := range all {
		pk.interrupt()
	}
}

// wait waits until every entry has finished, then stops the watcher; call
// it after close.
func (s *parkSet) wait() {
	s.wg.Wait()
	s.mu.Lock()
	w := s.watcher
	s.mu.Unlock()
	if w != nil {
		w.Close()
	}
}

// parkable reports whether r's poll may be parked: an HTTP/1.1 request
// that keeps its connection, on a connection from one of b's listeners
// whose socket can be watched, served by an http.Server (whose idle
// timeout it returns).
func (b *Broker) parkable(r *http.Request) (pc *parkConn, idle time.Duration, ok bool) {
	if r.ProtoMajor != 1 || r.ProtoMinor != 1 || r.Close {
		return nil, 0, false
	}
	ctx := r.Context()
	la, ok := ctx.Value(http.LocalAddrContextKey).(parkAddr)
	if !ok || la.pc.l.b != b || la.pc.sc == nil {
		return nil, 0, false
	}
	srv, ok := ctx.Value(http.ServerContextKey).(*http.Server)
	if !ok {
		return nil, 0, false
	}
	return la.pc, idleTimeout(srv), true
}

// park parks the enqueued, still waiting poll p, which arrived on pc,
// until holdEnd. It reports false if it cannot (b is shutting down, p was
// just matched, the connection cannot be hijacked or watched): the
// handler then waits as usual.
func (b *Broker) park(w http.ResponseWriter, pc *parkConn, p *matcher.Proxy, ev event.Proxy, start, holdEnd time.Time, idle time.Duration) bool {
	pk := &parked{b: b, p: p, ev: ev, start: start, idle: idle, pc: pc}
	watcher := b.parks.add(pk)
	if watcher == nil {
		return false
	}
	if !b.match.Notify(p, pk.wake) || !pk.hijack(w) {
		b.parks.remove(pk)
		return false
	}
	// From here on the poll is ours: the handler returns, whatever happens.
	// The watch and the timer may fire at once: mu keeps them waiting
	// until the poll is in phasePoll.
	pk.mu.Lock()
	watch, err := watcher.Add(pc.sc, pk.readable)
	if err != nil { // the socket is gone already
		pk.ph = phaseBusy
		pk.mu.Unlock()
		go pk.finish(endGone)
		return true
	}
	pk.watch = watch
	pk.timer = time.AfterFunc(time.Until(holdEnd), pk.holdOver)
	pk.ph = phasePoll
	now := pk.woken || pk.shutdown
	pk.mu.Unlock()
	if now {
		pk.end(endAnswer)
	}
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

// hijack takes the poll's connection from net/http.
func (pk *parked) hijack(w http.ResponseWriter) bool {
	conn, rw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return false
	}
	pk.conn = conn
	// Ours to hand back: the parkConn itself, or TLS that our listener
	// does (not the server's ServeTLS).
	pk.closeAfter = conn != net.Conn(pk.pc) && pk.pc.l.tls == nil
	// Bytes net/http read beyond the request (a pipelined request): a
	// plain connection replays them; above TLS they cannot be put back.
	if n := rw.Reader.Buffered(); n > 0 {
		if _, isTLS := conn.(*tls.Conn); isTLS || pk.closeAfter || n > maxReplay {
			pk.closeAfter = true
		} else {
			buf, _ := rw.Reader.Peek(n)
			pk.pc.replay = append(pk.pc.replay, buf...)
		}
	}
	// rw (net/http's buffers) is dropped here.
	return true
}

// wake is the poll's Notify function: a client took it or the matcher
// closed.
func (pk *parked) wake() {
	pk.mu.Lock()
	pk.woken = true
	pk.mu.Unlock()
	pk.end(endAnswer)
}

// holdOver is the timer's function while the poll waits. The timer runs
// it in a goroutine of its own, which can answer the poll itself: when
// thousands of holds end together, one goroutine each instead of two.
func (pk *parked) holdOver() {
	if pk.ending() {
		pk.finish(endAnswer)
	}
}

// interrupt is Close's: a waiting poll is answered, an idle connection
// closed, and no connection is handed back.
func (pk *parked) interrupt() {
	pk.mu.Lock()
	pk.shutdown = true
	idle := pk.ph == phaseIdle
	if idle {
		pk.ph = phaseBusy
		pk.timer.Stop()
	}
	pk.mu.Unlock()
	if idle {
		pk.close()
		return
	}
	pk.end(endAnswer)
}

// end moves a waiting poll to its response (or its disconnect), once, in
// a goroutine of its own: its callers must not block.
func (pk *parked) end(e ending) {
	if pk.ending() {
		go pk.finish(e)
	}
}

// ending leaves phasePoll and reports whether this call did: only the
// first event that ends a poll acts on it.
func (pk *parked) ending() bool {
	pk.mu.Lock()
	defer pk.mu.Unlock()
	if pk.ph != phasePoll {
		return false
	}
	pk.ph = phaseBusy
	pk.timer.Stop()
	return true
}

// readable is the watch's function: bytes, end of stream or an error
// arrived.
func (pk *parked) readable() {
	pk.mu.Lock()
	switch pk.ph {
	case phasePoll:
		if pk.drain() {
			pk.mu.Unlock()
			pk.end(endGone)
			return
		}
		if pk.watch.Rearm() != nil {
			pk.mu.Unlock()
			pk.end(endGone)
			return
		}
		pk.mu.Unlock()
	case phaseIdle:
		// The next request: the HTTP server reads it.
		pk.ph = phaseBusy
		pk.timer.Stop()
		pk.mu.Unlock()
		pk.handBack()
	default: // ending already; the idle phase rearms the watch
		pk.mu.Unlock()
	}
}

// drain reads what the socket holds without waiting, keeping it for the
// HTTP server, and reports whether the proxy has gone: end of stream, an
// error, or more than maxReplay bytes. Called with mu held in phasePoll.
func (pk *parked) drain() (gone bool) {
	var buf [512]byte
	for {
		n, err := pk.watch.ReadNow(buf[:])
		if err != nil {
			return true
		}
		if n == 0 {
			return false
		}
		if pk.closeAfter {
			continue // nobody will read it; only disconnects matter
		}
		if len(pk.pc.replay)+n > maxReplay {
			return true
		}
		pk.pc.replay = append(pk.pc.replay, buf[:n]...)
	}
}

// finish ends the poll: it answers the proxy and leaves the connection
// idle (or hands it back, or closes it), or, if the proxy has gone,
// releases its match.
func (pk *parked) finish(e ending) {
	b := pk.b
	if e == endGone {
		// A match made meanwhile never reaches the proxy: its client
		// tries another proxy.
		_ = b.match.Abandon(pk.p, errProxyGone)
		pk.ended(event.ProxyGone)
		pk.close()
		return
	}
	pk.mu.Lock()
	closeConn := pk.shutdown || pk.closeAfter
	pk.mu.Unlock()
	if !pk.respond(closeConn) || closeConn {
		pk.close()
		return
	}
	if len(pk.pc.replay) > 0 { // a request is already there
		pk.handBack()
		return
	}
	pk.mu.Lock()
	if pk.shutdown { // since the response went out
		pk.mu.Unlock()
		pk.close()
		return
	}
	pk.ph = phaseIdle
	if pk.idle > 0 {
		pk.timer = time.AfterFunc(pk.idle, pk.idleOver)
	}
	err := pk.watch.Rearm()
	if err != nil {
		pk.ph = phaseBusy
		pk.timer.Stop()
	}
	pk.mu.Unlock()
	if err != nil {
		pk.close()
	}
}

// idleOver is the timer's function while the connection is idle.
func (pk *parked) idleOver() {
	pk.mu.Lock()
	idle := pk.ph == phaseIdle
	if idle {
		pk.ph = phaseBusy
	}
	pk.mu.Unlock()
	if idle {
		pk.close()
	}
}

// close closes the connection and forgets the poll.
func (pk *parked) close() {
	if pk.watch != nil {
		pk.watch.Remove()
	}
	pk.conn.Close()
	pk.b.parks.remove(pk)
}

// handBack gives the connection back to the listener, for the HTTP
// server to read its next request. On a plain connection, the CR and LF
// bytes that may start it are dropped as net/http drops them after a
// POST; under TLS they cannot be (the parkConn is below TLS), and a
// request that starts with them is refused (400).
func (pk *parked) handBack() {
	pk.watch.Remove()
	_ = pk.conn.SetDeadline(time.Time{}) // the response's write deadline
	pk.b.parks.remove(pk)
	pk.pc.afterPOST = pk.conn == net.Conn(pk.pc)
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
		bodyp := b.bufs.Get().(*[]byte)
		defer b.putBuf(bodyp)
		body, outcome = b.appendMatchResponse((*bodyp)[:0], offer, pl), event.ProxyMatched
		if body == nil { // cannot happen, see appendMatchResponse
			_ = b.match.Abandon(pk.p, errProxyGone)
			pk.ended(event.ProxyGone)
			return false
		}
		*bodyp = body
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

// appendParkedResponse appends a 200 response carrying body, with the
// headers b.write sends through net/http, in net/http's order.
func appendParkedResponse(dst, body []byte, closeConn bool, now time.Time) []byte {
	dst = append(dst, parkedHead...)
	dst = append(dst, "Date: "...)
	dst = now.UTC().AppendFormat(dst, http.TimeFormat)
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n"...)
	if closeConn {
		// net/http writes its own fields after the date and length.
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	return append(dst, body...)
}

// appendMatchResponse appends a "client match" poll response to dst, or
// returns nil (and logs) if it cannot, which cannot happen: the offer was
// validated on the way in and the relay URLs at startup.
func (b *Broker) appendMatchResponse(dst []byte, offer matcher.Offer, pl *pool) []byte {
	resp := messages.ProxyPollResponse{
		Status:   messages.StatusClientMatch,
		Offer:    offer.SDP,
		NAT:      natString(offer.NAT),
		NextPoll: pl.nextPoll,
		RelayURL: b.bridges.At(offer.Bridge).WebSocketAddress,
	}
	body, err := resp.AppendEncode(dst)
	if err != nil {
		b.cfg.Logger.Error("encode proxy match response", "err", err)
		return nil
	}
	return body
}
