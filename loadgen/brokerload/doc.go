// Package brokerload measures a broker (Flurry's or Snowflake's) over its
// wire protocol alone.
//
// RunBroker: N simulated proxies long-poll POST /proxy (fresh Sid per poll,
// as Snowflake's proxy does; NAT, type and client-count mixes; an
// AcceptedRelayPattern) and answer every match on POST /answer with a
// fixed, real pion answer; M simulated clients POST /client with a "1.0\n"
// request carrying a real pion offer, back to back or at a fixed rate. It
// reports matches per second, client latency percentiles, denials,
// timeouts and errors per client-concurrency step and, given the broker's
// PID, its RSS and CPU. An optional idle phase holds K proxy polls open
// (re-issued as the broker's ~10 s hold returns them) and reports broker
// memory per waiting poll. Each simulated peer speaks HTTP/1.1 itself on
// one keep-alive connection (internal/brokerwire), at a fraction of
// net/http's client cost per request, so that on a machine shared with the
// broker most of the CPU goes to the broker. CheckURLs are scraped once
// the load has stopped, for the polls and goroutines a broker still holds.
package brokerload
