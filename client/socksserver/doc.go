// Package socksserver is the client's local SOCKS5 server, the way tor
// (and any other program) uses a Snowflake client: each SOCKS connection is
// carried through a new session to the relay, which connects it to its
// own target; the destination in the CONNECT request is not used. The
// bridge-line arguments tor passes in the SOCKS username and password
// (url=...;max=2) are applied to Config.Client with client.ApplyBridgeArgs.
//
// The flurry-client command serves it on tor's listeners or on -socks; an
// application that embeds the client can serve it on its own:
//
//	srv, err := socksserver.New(socksserver.Config{Client: cfg, Logger: log})
//	...
//	go srv.Serve(ctx, ln)
//	...
//	srv.Close()
//
// The accept loop is hardened against local misbehaviour:
//
//   - A silent connection blocks no other. Each SOCKS handshake (goptlib's,
//     with its 5 s deadline) runs in its own goroutine; goptlib alone runs
//     it inside Accept, one connection at a time. A connection must send
//     its first byte within a second. At most Config.MaxHandshakes run at
//     once; one more evicts the oldest that has not sent a byte yet, and is
//     closed at once only if every handshake in progress has spoken.
//   - Temporary accept errors (out of file descriptors, a connection
//     aborted before it was accepted) pause the loop and accepting resumes
//     by itself (package internal/netaccept); any other error ends Serve.
//   - Per-bridge state is bounded. The server keeps one client.Client per
//     distinct set of bridge-line arguments, so that NAT detection runs once
//     per bridge, at most Config.MaxBridges: a new set evicts the least
//     recently used one that carries no connection, and when all are in use
//     a connection naming one more is refused.
package socksserver
