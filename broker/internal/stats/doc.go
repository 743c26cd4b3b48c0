// Package stats counts what the broker does and exports it three ways:
// Prometheus metrics (GET /prometheus), Snowflake's daily metrics descriptor
// (GET /metrics, appended to the -metrics-log file) and Snowflake's /debug
// summary; it also keeps the short history the status page draws
// (broker/internal/statuspage).
//
// # Use
//
//	rec, err := stats.New(stats.Config{GeoIP: db, MetricsLogPath: path})
//	go rec.Run(ctx)                      // one descriptor per Interval (24 h)
//	broker: event sink = rec.Sink()      // or call ProxyPoll, ClientPoll, ... directly
//	mux.Handle("/prometheus", rec.PrometheusHandler())
//	mux.Handle("/metrics", rec.MetricsHandler())
//	mux.Handle("/debug", rec.DebugHandler())
//	mux.Handle("/proxy", rec.Instrument(stats.EndpointProxy, proxyHandler))
//
// # Fixed label sets
//
// Every method maps each string argument into a fixed set before counting,
// so no caller, even a buggy one, can add a metric series: proxy types to
// messages.KnownProxyTypes plus "unknown"; NAT types to restricted,
// unrestricted, unknown; client statuses to matched, denied, timeout,
// "other"; rendezvous methods to http, ampcache, sqs, "unknown"; endpoints
// and rejection reasons to the Endpoint* and Reason* constants plus
// "other". Countries come only from the geoip database and must be two
// characters of [A-Z0-9], else "??". The number of series is therefore
// bounded by the sizes of these sets (a few hundred countries in practice),
// whatever the traffic.
//
// # Privacy
//
// Every Prometheus counter (and the bucket counts of the duration
// histograms) is exported rounded up to a multiple of 8, like Snowflake's
// "rounded" counters, since most count people or their requests; only the
// available-proxies gauge is exact. Client and proxy addresses are never
// stored: unique proxy addresses are counted through a set of keyed 64-bit
// hashes (hash/maphash) whose random key is drawn anew each period and
// dropped, with the set, when the period ends; the set is bounded by
// Config.MaxProxyIPs. Addresses are never logged or written.
//
// # Metrics descriptor
//
// Every Config.Interval (24 h by default), Run appends the period's
// descriptor to Config.MetricsLogPath and starts a new period. The format is
// Snowflake's "version 1.1" (Snowflake's broker spec): one "key value" line
// each, "\n"-terminated, in this order:
//
//	snowflake-stats-end 2026-01-02 03:04:05 (86400 s)   end of period (UTC), length in seconds
//	snowflake-ips CA=4,DE=2                              unique proxy addresses per country
//	snowflake-ips-standalone 1                           unique proxy addresses per known type,
//	snowflake-ips-webext 1                               in messages.KnownProxyTypes order
//	snowflake-ips-badge 1                                (no line for unknown)
//	snowflake-ips-iptproxy 0
//	snowflake-ips-bloco 0
//	snowflake-ips-total 4                                unique proxy addresses
//	snowflake-idle-count 8                               polls answered "no match"          (binned)
//	snowflake-proxy-poll-with-relay-url-count 8          polls with AcceptedRelayPattern    (binned)
//	snowflake-proxy-poll-without-relay-url-count 0       polls without it                   (binned)
//	snowflake-proxy-rejected-for-relay-url-count 0       polls refused for their pattern    (binned)
//	client-denied-count 0                                clients with no proxy available    (binned)
//	client-restricted-denied-count 0                     ... whose NAT is restricted or unknown
//	client-unrestricted-denied-count 0                   ... whose NAT is unrestricted
//	client-snowflake-match-count 0                       clients that got an answer         (binned)
//	client-snowflake-timeout-count 0                     clients whose proxy did not answer (binned)
//	client-http-count 0                                  client polls per rendezvous method (binned)
//	client-http-ips                                      ... and per country (binned)
//	client-ampcache-count 0
//	client-ampcache-ips
//	client-sqs-count 0
//	client-sqs-ips
//	snowflake-ips-nat-restricted 0                       unique proxy addresses per NAT type
//	snowflake-ips-nat-unrestricted 0
//	snowflake-ips-nat-unknown 4
//
// "Binned" counts are rounded up to the next multiple of 8 (0 stays 0).
// Country lists are "CC=N" joined by ",", sorted by count (after binning)
// descending, then by code ascending; an empty list leaves "key " with a
// trailing space. Unique addresses are counted once per period in total
// and per country, once per type and once per NAT type they polled with.
// Snowflake prints the per-type lines in random order; here they always
// come in the order above.
//
// # Differences from Snowflake
//
// Proxy address statistics are kept without a geoip database (country
// "??"); Snowflake drops them (docs/design.md, weakness 17). The
// Prometheus unique-address counter counts new (address, type, NAT)
// combinations per period. Requests refused by the rate limiter or as
// malformed, and request durations, have metrics of their own.
package stats
