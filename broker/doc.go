// Package broker is Flurry's rendezvous broker, wire-compatible with the
// Snowflake v2.14.1 broker: Snowflake proxies and clients use it unchanged.
//
// # Use
//
//	b, err := broker.New(broker.Config{})  // zero value: Snowflake's timings, one bridge, no geoip, plain HTTP on 127.0.0.1:8080
//	err = b.Run(ctx)                        // or b.Serve(ctx, ln); returns when ctx ends
//
// Run serves until ctx ends, with the metrics descriptor every 24 h, then
// stops in order: waiting proxies get "no match" at once, clients in flight
// finish (at most ClientTimeout). To serve Handler with an http.Server of
// your own, serve it on Listener and call Close before the server's.
//
// The binary is broker/cmd/flurry-broker; docs/broker.md is the operator's
// guide.
//
// # Endpoints
//
//	POST /proxy    ProxyPollRequest  → held ≤ ProxyHold → ProxyPollResponse
//	               "client match" (client offer, client NAT, relay URL of the
//	               client's bridge) | "no match" | "incorrect relay pattern"
//	               (NextPoll 1 h); 400 + reason for a malformed poll or a Sid
//	               already waiting or matched
//	POST /client   "1.0\n" ClientPollRequest → 200 {"answer":…} | {"error":…}
//	               legacy bare offer (+ Snowflake-NAT-Type) → 200 answer |
//	               503 no proxies | 504 timed out | 400 + reason
//	POST /answer   ProxyAnswerRequest → {"Status":"success"} | {"Status":"client gone"};
//	               400 + reason if malformed or without a=candidate
//	OPTIONS        on the three: 200, empty (CORS preflight)
//	other methods  on the three: 405
//	GET /debug       Snowflake's summary of the proxies held (waiting, or
//	                 matched and not yet answered), byte for byte
//	GET /metrics     the metrics log: every descriptor so far (404 without
//	                 Config.MetricsLogPath)
//	GET /prometheus  Prometheus exposition of the broker's own registry (Go
//	                 and process collectors included); on OperatorHandler
//	                 (Config.MetricsAddr), in Handler only with
//	                 Config.PublicPrometheus
//	GET / and /status  the HTML status page
//	GET /robots.txt  "User-agent: *\nDisallow: /\n"
//	anything else    404
//
// Every response of the three rendezvous endpoints, /debug and /metrics
// carries Access-Control-Allow-Origin: * and Access-Control-Allow-Headers:
// Origin, X-Session-ID, as in Snowflake. Bodies over 100 000 bytes get 413;
// a request over a rate limit gets 429. A refused request (any 4xx) has
// its HTTP/1.x connection closed after the reply. The operator pages (/,
// /status, /debug, /metrics, a public /prometheus) are limited per address
// and overall (Config.PageRate); OperatorHandler serves them unlimited. Every rendezvous path (these three,
// /amp/client/ and SQS) is limited per address and over all addresses (see
// Config); no address is exempt by default. A client's offer is parsed as
// SDP and refused unless a WebRTC proxy could answer it, before any proxy
// sees it.
//
// # Statistics
//
// New creates the broker's statistics recorder (broker/internal/stats) and
// status page (broker/internal/statuspage); the broker reports every poll,
// answer and refused request to it (including rate-limited ones) with the
// client address it believes (TrustedProxies), mapped to a country by
// Config.GeoIP (nil: "??") and never stored. Run (or Serve) ends a metrics period every
// Config.MetricsInterval, appending Snowflake's descriptor to
// Config.MetricsLogPath. Every request's duration is recorded per endpoint.
// docs/broker-metrics.md lists the metrics.
//
// # Matching
//
// Proxies wait in two pools by their NAT type; an unrestricted client takes a
// restricted-or-unknown proxy first, a restricted or unknown client only an
// unrestricted one; the least-loaded proxy (reported client count) goes first.
// A proxy that took a client's offer and had not answered when the client's
// ClientTimeout ran out gets a strike against its address (a keyed hash of
// the IPv4 address or IPv6 /64, never the address, kept for up to
// Config.UnansweredPenalty by broker/internal/strikes), and proxies with
// fewer strikes go before the least-loaded ones.
// A proxy is only matched with a client whose bridge's relay host its own
// AcceptedRelayPattern accepts. The matcher (broker/internal/matcher) has no
// goroutine of its own, and every hand-over is a channel close under its
// lock, so nothing can block forever and a proxy whose poll ends leaves its
// pool at once.
//
// # Parked polls
//
// Served from Broker.Listener (as flurry-broker does), a waiting proxy poll
// over HTTP/1.1 is parked off net/http: its handler hijacks the connection
// and returns, dropping net/http's goroutine and buffers. The parked poll
// holds no goroutine: one watcher per broker (internal/fdwatch, epoll
// on Linux) notices a proxy that leaves (it leaves the pool at once), and a
// timer ends the hold. On a match, the end of the hold or Close, a
// short-lived goroutine writes the response (the bytes net/http would); the
// connection then waits, watched the same way, as an idle keep-alive one,
// and goes back to the server through the listener when the next request
// starts. The listener admits at most 32 connections into net/http at a
// time that have not yet started waiting (see admission), so that a wave
// of polls does not pass through net/http all at once. A waiting poll
// costs 2.5–4 KiB instead of 30 KiB (docs/performance.md). Every request,
// a parked connection's next one included, is read by net/http.
// While clients are being matched, a poll first waits up to 100 ms in its
// handler, where a quick match is cheaper. Polls over HTTP/2 or on other
// servers wait in their handler throughout.
//
// # Duplicate session ids
//
// A poll whose Sid is already waiting or matched (answer not yet delivered)
// is refused with 400 "duplicate session id"; the session it collides with is
// untouched. Snowflake overwrites the earlier entry (docs/design.md, weakness
// 12). Snowflake proxies draw a fresh random Sid for every poll.
//
// # Differences from Snowflake
//
// Beyond the races and the legacy-client panic, which are simply absent:
// malformed proxy messages get 400 with a short reason instead of an empty
// 400, oversize bodies 413 instead of 400, wrong methods 405; an empty
// AllowedRelayPattern accepts every proxy whose pattern accepts one of the
// bridges (Snowflake rejects every non-empty pattern); Forwarded and
// X-Forwarded-For are believed only from TrustedProxies.
package broker
