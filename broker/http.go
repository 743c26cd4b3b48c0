package broker

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/common/relaypattern"
	"github.com/flurrypt/flurry/messages"
)

// Request body buffers: pooled, starting small (a client offer is 1 to
// 3 KB), and dropped instead of pooled once grown past maxPooledBodyBuffer
// so that one large body pins nothing. A body that states a length under
// smallBody (a proxy poll, about 200 bytes) takes a buffer of that size from
// a pool of its own: when thousands of proxies arrive at once, each holds
// a buffer until its poll is decoded, and the pool keeps them all until
// the next garbage collections.
const (
	initialBodyBuffer   = 4 << 10
	maxPooledBodyBuffer = 16 << 10
	smallBody           = 512
)

// robotsTxt disallows every crawler.
const robotsTxt = "User-agent: *\nDisallow: /\n"

// Handler returns the broker's HTTP handler, for the public (rendezvous)
// listener:
//
//	POST /proxy       proxy long-poll
//	POST /client      client offer (1.0 framing or legacy bare offer)
//	POST /answer      proxy answer
//	GET  /amp/client/…  client offer through an AMP cache (reply armored in an AMP page)
//	GET  /debug       Snowflake's summary of the proxies held now
//	GET  /metrics     the metrics log (every descriptor so far); 404 without one
//	GET  /prometheus  Prometheus metrics, only with Config.PublicPrometheus
//	GET  /, /status   the status page
//	GET  /robots.txt  disallow everything
//	GET  /healthz     200, or 503 while the link to the cluster is down
//	GET  /webproxy/…  the files of Config.WebProxyDir (webproxy.go), if set
//
// The rendezvous endpoints, /debug and /metrics answer OPTIONS (CORS
// preflight) with 200 and carry Access-Control-Allow-Origin: * on every
// response, as in Snowflake; other methods get 405. Every other path is
// 404. The operator pages (/, /status, /debug, /metrics, /prometheus) are
// limited per address and overall (Config.PageRate). Every refused request
// (any 4xx) has its connection closed after the reply. The time to answer
// each request is recorded per endpoint.
//
// Serve it on a Listener so that waiting proxy polls keep no net/http
// goroutine or buffers; it works on any server.
func (b *Broker) Handler() http.Handler {
	rec := b.stats
	proxy := &endpoint{stats.EndpointProxy, event.EndpointProxy, &b.limits.proxy, b.serveProxy}
	client := &endpoint{stats.EndpointClient, event.EndpointClient, &b.limits.client, answered(b.serveClient)}
	answer := &endpoint{stats.EndpointAnswer, event.EndpointAnswer, &b.limits.answer, answered(b.serveAnswer)}
	mux := http.NewServeMux()
	mux.Handle(AMPPathPrefix, rec.Instrument(stats.EndpointAMP, b.AMPHandler()))
	b.operatorPages(mux, b.pageLimited)
	if b.cfg.PublicPrometheus {
		mux.Handle("GET /prometheus", rec.Instrument(stats.EndpointPrometheus, b.pageLimited(stats.EndpointPrometheus, rec.PrometheusHandler())))
	}
	mux.HandleFunc("GET /healthz", b.serveHealth)
	mux.Handle("/robots.txt", rec.Instrument(stats.EndpointRobots, http.HandlerFunc(serveRobots)))
	if b.cfg.WebProxyDir != "" {
		mux.Handle("GET "+WebProxyPath, webProxyFiles(b.cfg.WebProxyDir))
	}
	// A proxy poll keeps its connection's admission (see admission) until
	// it waits or ends; any other request gives it up at once. The
	// rendezvous endpoints are called here rather than through mux (which
	// routes their exact paths to them alone): a proxy's match response is
	// flushed from inside its handler, through net/http's header writer
	// (a 3 KiB frame), and the frames saved keep that path within a
	// goroutine's first 8 KiB of stack. Deeper, each garbage collection
	// shrank the connections' stacks and the next match grew them again
	// (docs/performance.md, "Broker").
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/proxy":
			b.serveEndpoint(w, r, proxy)
			releaseAdmission(r)
		case "/client":
			releaseAdmission(r)
			b.serveEndpoint(w, r, client)
		case "/answer":
			releaseAdmission(r)
			b.serveEndpoint(w, r, answer)
		default:
			// The rendezvous handlers close after a refusal themselves;
			// the rest, mux's own 404 and 405 included, through
			// closeOnRefusal.
			releaseAdmission(r)
			mux.ServeHTTP(&closeOnRefusal{ResponseWriter: w, r: r}, r)
		}
	})
}

// operatorPages registers the operator pages both listeners serve (/debug,
// /metrics, / and /status) on mux, each wrapped by limit with its
// statistics endpoint name.
func (b *Broker) operatorPages(mux *http.ServeMux, limit func(se string, h http.Handler) http.Handler) {
	rec := b.stats
	page := func(se string, h http.Handler) http.Handler { return rec.Instrument(se, limit(se, h)) }
	mux.Handle("/debug", page(stats.EndpointDebug, b.withCORS(http.HandlerFunc(b.serveDebug))))
	mux.Handle("/metrics", page(stats.EndpointMetrics, b.withCORS(rec.MetricsHandler())))
	// The page answers any path it is given: mount it on these two only.
	status := page(stats.EndpointStatus, b.page)
	mux.Handle("GET /{$}", status)
	mux.Handle("GET /status", status)
}

// closeOnRefusal is a ResponseWriter that has the connection of r closed
// after a 4xx reply (closeAfterRefusal).
type closeOnRefusal struct {
	http.ResponseWriter
	r *http.Request
}

func (w *closeOnRefusal) WriteHeader(code int) {
	if code >= 400 && code < 500 {
		closeAfterRefusal(w.ResponseWriter, w.r)
	}
	w.ResponseWriter.WriteHeader(code)
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *closeOnRefusal) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// OperatorHandler returns the handler of the operator listener
// (Config.MetricsAddr; serve it on a listener of your own otherwise):
// GET /prometheus serves the broker's registry (its own metrics plus the
// Go runtime and process collectors); /debug, /metrics, / and /status are
// Handler's, and /healthz; none of them is rate limited. Every other path
// is 404.
func (b *Broker) OperatorHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /prometheus", b.stats.Instrument(stats.EndpointPrometheus, b.stats.PrometheusHandler()))
	b.operatorPages(mux, func(_ string, h http.Handler) http.Handler { return h })
	mux.HandleFunc("GET /healthz", b.serveHealth)
	return mux
}

// withCORS adds Snowflake's CORS headers to h's responses and answers
// OPTIONS with 200 and an empty body.
func (b *Broker) withCORS(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr["Access-Control-Allow-Origin"] = b.cors[0]
		hdr["Access-Control-Allow-Headers"] = b.cors[1]
		if r.Method == http.MethodOptions {
			return
		}
		h.ServeHTTP(w, r)
	})
}

// serveDebug writes Snowflake's /debug summary of the proxies the matcher
// holds: waiting, and matched with a client but not yet answered (which
// Snowflake counts as available too). It reads counters the matcher keeps,
// so its cost does not grow with the number of proxies.
func (b *Broker) serveDebug(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		refuse(w, r, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var a stats.Available
	b.match.SessionCounts(func(proxyType string, nat matcher.NAT, n int) { a.Add(proxyType, natString(nat), n) })
	h := w.Header()
	h["Content-Type"] = b.ctype
	h.Set("X-Content-Type-Options", "nosniff")
	_ = stats.WriteDebug(w, a) // a failed write means the client went away
}

// bodyHandler serves a request whose body has been read into *bufp. It
// must call b.putBuf(bufp) once it no longer needs the body. It returns
// true if it handed the request over (a parked proxy poll), which then
// records its own duration.
type bodyHandler func(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte) (handedOver bool)

// answered adapts a handler that always answers its request itself.
func answered(serve func(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte)) bodyHandler {
	return func(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte) bool {
		serve(w, r, addr, start, bufp)
		return false
	}
}

// endpoint is a rendezvous endpoint: its statistics and event names, its
// rate limits and its handler.
type endpoint struct {
	se    string
	ep    event.Endpoint
	limit *pathLimit
	serve bodyHandler
}

// serveEndpoint serves a request to the rendezvous endpoint e: CORS, the
// method check, the rate limits and the body limit, then e.serve; it
// records the request's duration unless e.serve handed the request over.
func (b *Broker) serveEndpoint(w http.ResponseWriter, r *http.Request, e *endpoint) {
	start := time.Now()
	h := w.Header()
	h["Access-Control-Allow-Origin"] = b.cors[0]
	h["Access-Control-Allow-Headers"] = b.cors[1]
	addr := b.addrs.Addr(r)
	if (addr.IsLoopback() || addr.IsPrivate()) && b.addrs.IgnoredForwarding(r) {
		b.warnForwarding.Do(func() {
			b.cfg.Logger.Warn("a request from a loopback or private peer carries Forwarded or X-Forwarded-For, which is ignored: " +
				"if a reverse proxy runs there, add its address to -trusted-proxies, or every client behind it looks like the proxy " +
				"(they share one rate limit and one geoip country)")
		})
	}
	switch r.Method {
	case http.MethodPost:
		if b.servePost(w, r, e, addr, start) {
			return
		}
	case http.MethodOptions: // preflight: 200, empty body
	default:
		h["Allow"] = b.allow
		b.reject(w, r, e.ep, event.ReasonMethod, addr, http.StatusMethodNotAllowed, "method not allowed")
	}
	b.stats.ObserveRequest(e.se, time.Since(start))
}

// servePost is serveEndpoint's for a POST; it returns e.serve's result.
func (b *Broker) servePost(w http.ResponseWriter, r *http.Request, e *endpoint, addr netip.Addr, start time.Time) bool {
	if !b.limits.allow(e.limit, addr) {
		b.rateLimited(w, r, e.ep, addr)
		return false
	}
	bufp, status := b.readBody(w, r)
	if status == http.StatusRequestEntityTooLarge {
		b.reject(w, r, e.ep, event.ReasonTooLarge, addr, status, "request body too large")
		return false
	}
	if status != 0 {
		b.reject(w, r, e.ep, event.ReasonMalformed, addr, status, "cannot read request body")
		return false
	}
	return e.serve(w, r, addr, start, bufp)
}

// readBody reads the request body into a pooled buffer. It returns a
// non-zero status (413 or 400) if the body is too large or unreadable.
func (b *Broker) readBody(w http.ResponseWriter, r *http.Request) (*[]byte, int) {
	if r.ContentLength > messages.MaxBodySize {
		return nil, http.StatusRequestEntityTooLarge
	}
	rd := http.MaxBytesReader(w, r.Body, messages.MaxBodySize)
	pool := &b.bufs
	if r.ContentLength >= 0 && r.ContentLength < smallBody {
		pool = &b.small
	}
	bufp := pool.Get().(*[]byte)
	buf := (*bufp)[:0]
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			*bufp = buf
			b.putBuf(bufp)
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				return nil, http.StatusRequestEntityTooLarge
			}
			return nil, http.StatusBadRequest
		}
	}
	*bufp = buf
	return bufp, 0
}

// putBuf returns a body buffer to its pool (by its size) unless it grew
// too large.
func (b *Broker) putBuf(bufp *[]byte) {
	switch c := cap(*bufp); {
	case c > maxPooledBodyBuffer:
	case c < initialBodyBuffer:
		*bufp = (*bufp)[:0]
		b.small.Put(bufp)
	default:
		*bufp = (*bufp)[:0]
		b.bufs.Put(bufp)
	}
}

// reject answers a request refused before it was understood, and closes
// its connection after the reply.
func (b *Broker) reject(w http.ResponseWriter, r *http.Request, ep event.Endpoint, reason event.Reason, addr netip.Addr, status int, text string) {
	b.sink.RequestRejected(ep, reason, addr)
	b.cfg.Logger.Debug("request rejected", "endpoint", ep.String(), "reason", reason.String(), "status", status)
	refuse(w, r, text, status)
}

// write sends a 200 response body.
func (b *Broker) write(w http.ResponseWriter, body []byte) {
	w.Header()["Content-Type"] = b.ctype
	_, _ = w.Write(body) // a failed write means the peer left; nothing to do
}

// serveProxy handles a proxy's long-poll. A poll that can be parked (see
// Listener) waits off net/http: serveProxy then returns true. A match is
// delivered here, from a small frame, once awaitProxy's large one is gone.
func (b *Broker) serveProxy(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte) bool {
	m, matched, handedOver := b.awaitProxy(w, r, addr, start, bufp)
	if matched {
		b.deliverMatch(w, r, &m)
	}
	return handedOver
}

// proxyMatch is a proxy poll that a client took, for deliverMatch.
type proxyMatch struct {
	p     *matcher.Proxy
	ev    event.Proxy
	offer matcher.Offer
	pl    *pool
}

// awaitProxy decodes a proxy's poll, enqueues it and waits for a client or
// parks it. It answers the poll itself unless it returns matched (then
// serveProxy delivers m) or handedOver (a parked poll).
func (b *Broker) awaitProxy(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte) (m proxyMatch, matched, handedOver bool) {
	req, err := messages.DecodeProxyPollRequest(*bufp)
	b.putBuf(bufp)
	if err != nil {
		b.reject(w, r, event.EndpointProxy, event.ReasonMalformed, addr, http.StatusBadRequest, messageErrorText(err))
		return m, false, false
	}
	ev := event.Proxy{Type: req.Type, NAT: req.NAT, Addr: addr, RelayPattern: req.AcceptedRelayPattern != nil}
	accepts := b.acceptance(req.AcceptedRelayPattern)
	if accepts == 0 {
		b.sink.ProxyPollRejected(ev)
		b.write(w, b.fixed.incorrectPattern)
		return m, false, false
	}
	nat := matcherNAT(req.NAT)
	p := &matcher.Proxy{Sid: req.Sid, NAT: nat, Clients: req.Clients, Accepts: accepts, Type: req.Type, Key: b.strikes.Key(addr)}
	if b.penalise {
		p.Strikes = b.strikes.Count(p.Key)
	}
	switch err := b.match.Enqueue(p); {
	case err == nil:
	case errors.Is(err, matcher.ErrDuplicateSid):
		b.reject(w, r, event.EndpointProxy, event.ReasonDuplicateSid, addr, http.StatusBadRequest, "duplicate session id")
		return m, false, false
	default: // matcher.ErrClosed: shutting down
		b.sink.ProxyPollStarted(ev)
		b.sink.ProxyPollEnded(ev, event.ProxyIdle)
		b.write(w, b.pools[poolIndex(nat)].Load().noMatch)
		return m, false, false
	}
	b.sink.ProxyPollStarted(ev)
	var offer matcher.Offer
	hold := b.cfg.ProxyHold
	if pc, idle, ok := b.parkable(r); ok && b.parkAfter < hold {
		holdEnd := time.Now().Add(hold)
		err = matcher.ErrStillWaiting
		if b.matchingNow() {
			releaseAdmission(r)
			offer, err = b.match.Await(r.Context(), p, b.parkAfter)
		}
		if err == matcher.ErrStillWaiting {
			if b.park(w, pc, p, ev, start, holdEnd, idle) {
				return m, false, true
			}
			releaseAdmission(r)
			offer, err = b.match.Wait(r.Context(), p, time.Until(holdEnd))
		}
	} else {
		releaseAdmission(r)
		offer, err = b.match.Wait(r.Context(), p, hold)
	}
	pl := b.pools[poolIndex(nat)].Load()
	switch {
	case err == nil:
		return proxyMatch{p: p, ev: ev, offer: offer, pl: pl}, true, false
	case errors.Is(err, matcher.ErrNoMatch):
		b.sink.ProxyPollEnded(ev, event.ProxyIdle)
		b.write(w, pl.noMatch)
	default:
		// The proxy went away; there is nobody to answer.
		b.sink.ProxyPollEnded(ev, event.ProxyGone)
	}
	return m, false, false
}

// deliverMatch sends the match response to the proxy whose poll m.p was
// matched, and records the poll's end. If the response cannot be encoded
// or sent, the proxy's connection is already closed, or the write or flush
// fails, the offer never reached the proxy: the match is abandoned, so that
// its client is released at once to the next proxy (or "no proxies")
// instead of waiting out its time, and the proxy gets no strike.
func (b *Broker) deliverMatch(w http.ResponseWriter, r *http.Request, m *proxyMatch) {
	bufp := b.bufs.Get().(*[]byte)
	defer b.putBuf(bufp)
	body := b.appendMatchResponse((*bufp)[:0], m.offer, m.pl)
	*bufp = body
	err := r.Context().Err() // net/http saw the connection close
	if err == nil && body == nil {
		err = errEncodeMatch
		http.Error(w, "internal error", http.StatusInternalServerError)
	}
	if err != nil {
		_ = b.match.Abandon(m.p, err)
		b.sink.ProxyPollEnded(m.ev, event.ProxyGone)
		return
	}
	b.sink.ProxyPollEnded(m.ev, event.ProxyMatched)
	h := w.Header()
	h["Content-Type"] = b.ctype
	// Flushing before the handler returns would make net/http chunk the
	// body; state its length as it would have.
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	if _, err = w.Write(body); err == nil {
		err = http.NewResponseController(w).Flush()
	}
	if err != nil {
		_ = b.match.Abandon(m.p, err)
		b.cfg.Logger.Debug("match not delivered to the proxy: its client tries another")
	}
}

// errEncodeMatch is the cause given to Matcher.Abandon when a match
// response cannot be encoded.
var errEncodeMatch = errors.New("cannot encode match response")

// acceptance returns the set of bridges (bit i = bridge i) a proxy with the
// given AcceptedRelayPattern may be matched with, or 0 if the proxy must be
// told "incorrect relay pattern".
func (b *Broker) acceptance(rule *string) uint64 {
	if rule == nil {
		return 0 // a proxy older than 1.3 relays only to its own default
	}
	pat, err := proxyRelayPattern(*rule)
	if err != nil {
		return 0
	}
	if b.allowed != nil && !pat.IsSupersetOf(*b.allowed) {
		return 0
	}
	var mask uint64
	for i := range b.bridges.Len() {
		if pat.Match(b.bridges.At(i).Host) {
			mask |= 1 << uint(i)
		}
	}
	return mask
}

// proxyRelayPattern parses a proxy's AcceptedRelayPattern as Snowflake's
// broker does: the trailing '$' is optional there (Snowflake's browser
// proxies send "snowflake.torproject.net"), and a rule without it means
// the same as with it. Proxies' own flags stay strict.
func proxyRelayPattern(rule string) (relaypattern.Pattern, error) {
	if rule != "" && !strings.HasSuffix(rule, "$") {
		rule += "$"
	}
	return relaypattern.Parse(rule)
}

// serveClient handles a client's offer.
func (b *Broker) serveClient(w http.ResponseWriter, r *http.Request, addr netip.Addr, start time.Time, bufp *[]byte) {
	body := *bufp
	legacy := messages.IsLegacyClientPoll(body)
	var (
		req messages.ClientPollRequest
		err error
	)
	if legacy {
		req, err = messages.DecodeLegacyClientPoll(body, r.Header.Get("Snowflake-NAT-Type"))
	} else {
		req, err = messages.DecodeClientPollRequest(body)
	}
	if err == nil {
		_, err = checkOffer(req.Offer)
	}
	b.putBuf(bufp)
	ev := event.Client{NAT: messages.NATUnknown, Addr: addr, Method: event.MethodHTTP, Legacy: legacy}
	if err != nil {
		b.sink.ClientPollEnded(ev, event.ClientBadRequest)
		b.cfg.Logger.Debug("client request rejected", "reason", messageErrorText(err))
		if legacy {
			// Snowflake panics here (docs/design.md, weakness 13).
			refuse(w, r, messageErrorText(err), http.StatusBadRequest)
			return
		}
		b.clientError(w, err.Error())
		return
	}
	ev.NAT = req.NAT
	ctx, cancel := context.WithDeadline(r.Context(), start.Add(b.cfg.ClientTimeout))
	defer cancel()
	answer, outcome := b.clientRendezvous(ctx, ev, req)
	switch {
	case legacy:
		b.writeLegacyClient(w, r, answer, outcome)
	case outcome == event.ClientMatched:
		bufp := b.bufs.Get().(*[]byte)
		defer b.putBuf(bufp)
		resp, err := messages.ClientPollResponse{Answer: answer}.AppendEncode((*bufp)[:0])
		*bufp = resp
		if err != nil {
			// Cannot happen: the answer was validated on the way in.
			b.cfg.Logger.Error("encode client answer", "err", err)
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
		b.write(w, resp)
	default:
		b.write(w, b.fixed.clientError(outcome))
	}
}

// clientRendezvous finds the bridge a decoded client request names and a
// proxy for it, and records the outcome with the client's ev. It returns
// the proxy's answer with ClientMatched, or ClientUnknownBridge,
// ClientDenied (no proxy) or ClientTimeout (no answer before ctx ended).
func (b *Broker) clientRendezvous(ctx context.Context, ev event.Client, req messages.ClientPollRequest) (string, event.ClientOutcome) {
	outcome := event.ClientUnknownBridge
	var answer string
	if fp, err := messages.ParseFingerprint(req.Fingerprint); err == nil {
		if bridge, ok := b.bridges.Lookup(fp); ok {
			ans, err := b.rendezvous(ctx, req, bridge)
			switch {
			case err == nil:
				outcome, answer = event.ClientMatched, ans.SDP
			case errors.Is(err, matcher.ErrNoProxies):
				outcome = event.ClientDenied
			default: // matcher.ErrTimedOut
				outcome = event.ClientTimeout
				// Only when the broker's deadline passed: a client
				// that leaves early must not strike its proxy.
				if ans.ProxyKey != 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
					b.unanswered(ans)
				}
			}
		}
	}
	b.sink.ClientPollEnded(ev, outcome)
	return answer, outcome
}

// unanswered records that the proxy ans describes took a client's offer
// and did not answer in time: a strike against its address (unless the
// penalty is off) and an event. The log line carries neither the address
// nor the key.
func (b *Broker) unanswered(ans matcher.Answer) {
	b.sink.ProxyUnanswered(ans.ProxyType)
	if !b.penalise {
		return
	}
	n := b.strikes.Add(ans.ProxyKey)
	b.cfg.Logger.Debug("proxy left a client unanswered: strike recorded", "proxy_type", ans.ProxyType, "strikes", n)
}

// writeLegacyClient answers a legacy (bare offer) client as Snowflake does:
// the bare answer, 503 without proxies, 504 on timeout; and, where
// Snowflake panics, 400 with a reason.
func (b *Broker) writeLegacyClient(w http.ResponseWriter, r *http.Request, answer string, outcome event.ClientOutcome) {
	switch outcome {
	case event.ClientMatched:
		b.write(w, []byte(answer))
	case event.ClientDenied:
		w.WriteHeader(http.StatusServiceUnavailable)
	case event.ClientTimeout:
		w.WriteHeader(http.StatusGatewayTimeout)
	default:
		refuse(w, r, messages.StrUnknownBridge, http.StatusBadRequest)
	}
}

// clientError sends {"error": text} with status 200, as Snowflake does.
func (b *Broker) clientError(w http.ResponseWriter, text string) {
	resp, err := messages.ClientPollResponse{Error: text}.Encode()
	if err != nil {
		resp, err = messages.ClientPollResponse{Error: messages.ErrMalformed.Error()}.Encode()
		if err != nil {
			http.Error(w, "internal error", http.StatusInternalServerError)
			return
		}
	}
	b.write(w, resp)
}

// serveAnswer handles a proxy's answer.
func (b *Broker) serveAnswer(w http.ResponseWriter, r *http.Request, addr netip.Addr, _ time.Time, bufp *[]byte) {
	req, err := messages.DecodeProxyAnswerRequest(*bufp)
	b.putBuf(bufp)
	if err != nil {
		b.reject(w, r, event.EndpointAnswer, event.ReasonMalformed, addr, http.StatusBadRequest, messageErrorText(err))
		return
	}
	if err := checkAnswer(req.Answer); err != nil {
		b.reject(w, r, event.EndpointAnswer, event.ReasonMalformed, addr, http.StatusBadRequest, err.Error())
		return
	}
	if proxyType, ok := b.match.Answer(req.Sid, req.Answer); ok {
		b.sink.ProxyAnswered(proxyType, event.AnswerSuccess)
		b.write(w, b.fixed.answerSuccess)
		return
	}
	if b.forwardAnswer(r.Context(), req) { // the owner records the answer
		b.write(w, b.fixed.answerSuccess)
		return
	}
	b.sink.ProxyAnswered("", event.AnswerClientGone)
	b.write(w, b.fixed.answerGone)
}

func serveRobots(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, robotsTxt)
}

// messageErrorText maps a decode error to a short fixed text (never
// anything taken from the request).
func messageErrorText(err error) string {
	for _, s := range []error{
		messages.ErrTooLarge,
		messages.ErrUnknownVersion,
		messages.ErrMissingSid,
		messages.ErrInvalidSid,
		messages.ErrInvalidNAT,
		messages.ErrInvalidRelayPattern,
		messages.ErrMissingOffer,
		messages.ErrMissingAnswer,
		messages.ErrInvalidSessionDescription,
		messages.ErrInvalidFingerprint,
	} {
		if errors.Is(err, s) {
			return s.Error()
		}
	}
	return messages.ErrMalformed.Error()
}

func matcherNAT(nat string) matcher.NAT {
	switch nat {
	case messages.NATRestricted:
		return matcher.NATRestricted
	case messages.NATUnrestricted:
		return matcher.NATUnrestricted
	}
	return matcher.NATUnknown
}

func natString(nat matcher.NAT) string {
	switch nat {
	case matcher.NATRestricted:
		return messages.NATRestricted
	case matcher.NATUnrestricted:
		return messages.NATUnrestricted
	}
	return messages.NATUnknown
}

func poolIndex(nat matcher.NAT) int {
	if nat == matcher.NATUnrestricted {
		return poolUnrestricted
	}
	return poolRestricted
}
