package broker

import (
	"net/http"
	"net/netip"
	"time"

	"golang.org/x/time/rate"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/ratelimit"
)

// limits are the rate limits of the rendezvous paths and of the operator
// pages on the rendezvous listener. Immutable after New; the limiters
// themselves are safe for concurrent use.
type limits struct {
	proxy, client, answer, amp pathLimit
	page                       pathLimit     // /, /status, /debug, /metrics, public /prometheus
	sqs                        *rate.Limiter // nil: none
	exempt                     []netip.Prefix
	now                        func() time.Time
}

// pathLimit is one path's limits: per address, then over all addresses.
type pathLimit struct {
	perAddr *ratelimit.Limiter // nil: none
	global  *rate.Limiter      // nil: none
}

// setRateLimitDefaults fills in the zero rate limit fields of c.
func (c *Config) setRateLimitDefaults() {
	for _, f := range []struct {
		rate  *float64
		burst *int
		dr    float64
		db    int
	}{
		{&c.ProxyRate, &c.ProxyBurst, DefaultProxyRate, DefaultProxyBurst},
		{&c.ClientRate, &c.ClientBurst, DefaultClientRate, DefaultClientBurst},
		{&c.AnswerRate, &c.AnswerBurst, DefaultAnswerRate, DefaultAnswerBurst},
		{&c.AMPRate, &c.AMPBurst, DefaultAMPRate, DefaultAMPBurst},
		{&c.PageRate, &c.PageBurst, DefaultPageRate, DefaultPageBurst},
	} {
		if *f.rate == 0 {
			*f.rate = f.dr
		}
		if *f.burst == 0 {
			*f.burst = f.db
		}
	}
	for _, f := range []struct {
		rate *float64
		dr   float64
	}{
		{&c.ProxyGlobalRate, DefaultProxyGlobalRate},
		{&c.ClientGlobalRate, DefaultClientGlobalRate},
		{&c.AnswerGlobalRate, DefaultAnswerGlobalRate},
		{&c.AMPGlobalRate, DefaultAMPGlobalRate},
		{&c.PageGlobalRate, DefaultPageGlobalRate},
		{&c.SQSGlobalRate, DefaultSQSGlobalRate},
	} {
		if *f.rate == 0 {
			*f.rate = f.dr
		}
	}
	c.RateLimitExempt = append([]netip.Prefix(nil), c.RateLimitExempt...)
}

// newLimits builds the limiters c (with defaults) describes, on the clock
// now (time.Now in production).
func newLimits(c Config, now func() time.Time) limits {
	if c.DisableRateLimits {
		return limits{now: now}
	}
	perAddr := func(r float64, burst int) *ratelimit.Limiter {
		if r <= 0 {
			return nil
		}
		return ratelimit.New(ratelimit.Config{Rate: r, Burst: burst, MaxEntries: c.RateLimitEntries, Now: now})
	}
	return limits{
		proxy:  pathLimit{perAddr(c.ProxyRate, c.ProxyBurst), globalLimiter(c.ProxyGlobalRate)},
		client: pathLimit{perAddr(c.ClientRate, c.ClientBurst), globalLimiter(c.ClientGlobalRate)},
		answer: pathLimit{perAddr(c.AnswerRate, c.AnswerBurst), globalLimiter(c.AnswerGlobalRate)},
		amp:    pathLimit{perAddr(c.AMPRate, c.AMPBurst), globalLimiter(c.AMPGlobalRate)},
		page:   pathLimit{perAddr(c.PageRate, c.PageBurst), globalLimiter(c.PageGlobalRate)},
		sqs:    globalLimiter(c.SQSGlobalRate),
		exempt: c.RateLimitExempt,
		now:    now,
	}
}

// globalLimiter returns a bucket of r per second and bursts of 2r (at
// least 1), or nil for r <= 0.
func globalLimiter(r float64) *rate.Limiter {
	if r <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(r), max(int(2*r), 1))
}

// allow reports whether a request from addr to the path l limits may
// proceed now, and takes its tokens if so. A request refused per address
// takes no token from the path's global bucket.
func (ls *limits) allow(l *pathLimit, addr netip.Addr) bool {
	if ls.isExempt(addr) {
		return true
	}
	if !l.perAddr.Allow(addr) {
		return false
	}
	return l.global == nil || l.global.AllowN(ls.now(), 1)
}

// allowSQS reports whether one more SQS message may be handled now.
func (ls *limits) allowSQS() bool { return ls.sqs == nil || ls.sqs.AllowN(ls.now(), 1) }

func (ls *limits) isExempt(addr netip.Addr) bool {
	addr = addr.Unmap()
	for _, p := range ls.exempt {
		if p.Contains(addr) {
			return true
		}
	}
	return false
}

// rateLimited answers a request refused by a rate limit: 429 with
// Retry-After: 1.
func (b *Broker) rateLimited(w http.ResponseWriter, r *http.Request, ep event.Endpoint, addr netip.Addr) {
	w.Header().Set("Retry-After", "1")
	b.reject(w, r, ep, event.ReasonRateLimited, addr, http.StatusTooManyRequests, "rate limit exceeded")
}

// pageLimited wraps h, an operator page of the rendezvous listener
// recorded as the statistics endpoint se, in the per-address and overall
// page limits: a request over them gets 429 (Retry-After: 1) and its
// connection is closed.
func (b *Broker) pageLimited(se string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !b.limits.allow(&b.limits.page, b.addrs.Addr(r)) {
			b.stats.RateLimited(se)
			w.Header().Set("Retry-After", "1")
			refuse(w, r, "rate limit exceeded", http.StatusTooManyRequests)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// refuse replies to r with status (a 4xx) and text, and has its
// connection closed after the reply (closeAfterRefusal).
func refuse(w http.ResponseWriter, r *http.Request, text string, status int) {
	closeAfterRefusal(w, r)
	http.Error(w, text, status)
}

// closeAfterRefusal has the server close the HTTP/1.x connection of a
// refused request once the reply is sent, instead of keeping it for the
// idle timeout: Connection: close; and a read deadline already past, so that net/http does not wait
// for the rest of a body the request announced but the handler did not
// read. HTTP/2 is left alone: there Connection: close would end every
// stream of the connection (a CDN's, shared by many clients), and an idle
// connection is bounded by the idle timeout and the stream limits.
func closeAfterRefusal(w http.ResponseWriter, r *http.Request) {
	if r.ProtoMajor != 1 {
		return
	}
	w.Header().Set("Connection", "close")
	// Not supported by every server (an httptest recorder): the header
	// alone then closes the connection after the reply.
	_ = http.NewResponseController(w).SetReadDeadline(time.Unix(1, 0))
}
