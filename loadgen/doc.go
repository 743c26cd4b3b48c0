// Package loadgen measures Flurry (or any Snowflake-compatible) brokers,
// relays and whole chains from the outside, speaking only the wire protocol:
// it imports no role package, so the same runs drive Snowflake's own broker
// and server for comparison.
//
// Four runs, each bounded by a duration or a count and each usable
// in-process (tests, the demo) or through flurry-loadgen:
//
//   - RunBroker: N simulated proxies long-poll POST /proxy (fresh Sid per
//     poll, as Snowflake's proxy does; NAT, type and client-count mixes;
//     an AcceptedRelayPattern) and answer every match on POST /answer with
//     a fixed, real pion answer; M simulated clients POST /client with a
//     "1.0\n" request carrying a real pion offer, back to back or at a fixed
//     rate. Reports matches per second, client latency percentiles,
//     denials, timeouts and errors per client-concurrency step and, given
//     the broker's PID, its RSS and CPU. An optional idle phase holds K
//     proxy polls open (re-issued as the broker's ~10 s hold returns them)
//     and reports broker memory per waiting poll. Each simulated peer
//     speaks HTTP/1.1 itself on one keep-alive connection (httpclient.go),
//     at a fraction of net/http's client cost per request, so that on a
//     machine shared with the broker most of the CPU goes to the broker.
//   - RunRelayIdle: opens N WebSocket carriers (upgrade, token, ClientID,
//     then nothing) and reports the relay's memory per idle carrier.
//   - RunRelayThroughput: C carriers each run KCP and smux with Snowflake's
//     client parameters through the relay to its forward target (an echo
//     or a source; StartTarget serves either) and reports MB/s.
//   - RunChain: connects through a SOCKS5 proxy (a flurry-client) and
//     measures throughput and time to first byte of HTTP GETs or raw reads.
//
// # Safety
//
// Every address a run connects to must be a loopback address (127.0.0.0/8,
// ::1 or the name localhost): the URL or address is checked up front
// (ErrNotLoopback) and every dial is checked again on the resolved address.
// AllowNonLoopback lifts the check for deliberate measurements of a remote
// test system you run yourself; never point it at public infrastructure.
//
// # Memory figures
//
// Memory comes from /proc/PID/status (VmRSS) and CPU from /proc/PID/stat
// (utime+stime), so it needs Linux and the process ID of a broker or relay
// running in its own process. The per-poll and per-carrier figures are
// (RSS while holding K - RSS before) / K: RSS includes whatever the Go
// runtime has not yet returned to the system, so use steps large enough
// (thousands) for the difference to dominate the noise.
package loadgen
