// Package httpcmp serves a broker through the HTTP servers it is measured
// beside (docs/performance.md, "Hand-written servers against libraries"),
// so that flurry-loadgen can measure each the same way: CPU per match and
// memory per waiting proxy poll.
//
//	ServerFlurry    Broker.Serve, what flurry-broker runs: net/http, with
//	                waiting polls parked off it (Broker.Listener)
//	ServerNetHTTP   net/http on the plain listener: every waiting poll
//	                keeps its handler goroutine and net/http's buffers
//	ServerFastHTTP  valyala/fasthttp, the broker's handlers called in its
//	                worker goroutine through a lean adapter
//
// The binary is cmd/httpcmp-broker. The package is a test kit: fasthttp is
// linked by nothing the project ships (internal/testkit/deptest).
package httpcmp
