// Package demo runs a whole Flurry system as separate processes on loopback:
// the orchestration behind `make demo` (demo/cmd/flurry-demo) and the
// process-level tests.
//
// The pieces, each usable alone:
//
//   - Build compiles the binaries into a directory (without -race);
//     BinariesIn names binaries that were built elsewhere.
//   - Every process runs under internal/childproc (its own process group,
//     output appended to a log file, SIGTERM then SIGKILL to the group);
//     TCPReady and HTTPReady are the readiness probes it polls.
//   - Target is a loopback HTTP server with one generated file of known
//     SHA-256.
//   - Fetch and FetchTarget download through a SOCKS5 server (the client)
//     and hash the body on the fly, timing the SOCKS grant, the first byte
//     and the whole transfer.
//   - Start brings up a Cluster: target, relay (standalone, forwarding to
//     the target), broker (with a bridge list naming the relay and a short
//     poll interval), optionally flurry-natprobe, proxies and a client in
//     SOCKS mode, all on free loopback ports, WebRTC restricted to loopback.
//     StartProxy adds proxies, ServingProxies finds the ones carrying a
//     client (from their metrics), Close stops everything in order.
//   - WriteTorBridge and WriteTorClient write torrc files for Debian's tor
//     running flurry-relay and flurry-client as pluggable transports;
//     StartTorNetwork brings up a private Tor network (TestingTorNetwork: a
//     directory authority and exit relays, all on 127.0.0.1, tor's DNS
//     pointed at loopback) for a client to reach through a Flurry bridge.
//
// Everything listens on and connects to 127.0.0.1 only, needs no root and
// no network.
package demo
