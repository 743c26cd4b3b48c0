// Package natprobe is a NAT test peer for proxies, speaking Snowflake
// v2.14.1's probetest protocol, so that both Flurry and Snowflake proxies
// can learn whether their NAT is restrictive.
//
// # Use
//
//	s, err := natprobe.New(natprobe.Config{ListenAddr: ":8443", TLSConfig: tc})
//	err = s.Run(ctx) // or s.Serve(ctx, ln), then s.Close()
//
// Run serves Handler until ctx ends, then ends the probes in progress.
// The binary is natprobe/cmd/flurry-natprobe.
//
// # Protocol
//
//	proxy                                                   natprobe
//	  │ POST /probe   (body ≤ 100000 bytes)                      │
//	  │ {"Status":"client match","Offer":"{\"type\":\"offer\",…}","NAT":"","NextPoll":0,"RelayURL":""}
//	  │─────────────────────────────────────────────────────────▶│ answer the offer (pion),
//	  │                                                          │ gather ICE ≤ GatherTimeout
//	  │◀─ 200 {"Version":"1.3","Sid":"stub-sid","Answer":"{\"type\":\"answer\",…}"}
//	  │ ═══════ WebRTC: the proxy's DataChannel "test" opens? ═══▶│ once open, the probe closes it
//
// The proxy reports "unrestricted" if its DataChannel opens within its own
// timeout (20 s in Snowflake), "restricted" otherwise. Errors are plain HTTP
// statuses with an empty body: 400 for a body that is not a "client match"
// poll response with a valid offer (Snowflake's probetest crashes the
// request instead, reference item 26), 405 for methods other than POST and
// OPTIONS, 413 for a body over the limit, 503 when MaxConcurrent probes (or
// MaxPerAddress from the same address or IPv6 /64) are
// already running. Every response carries Access-Control-Allow-Origin: *
// so that browser proxies can probe too.
//
// # The probe only tells the truth behind a restrictive NAT
//
// The answer says whether the proxy could reach *this* peer. A probe host
// with a public address (or a permissive NAT) is reachable from almost any
// proxy, so every proxy would be told "unrestricted". Deploy the probe
// behind an address- and port-dependent ("symmetric") NAT, for example in a
// network namespace whose traffic leaves through nftables masquerading with
// random ports; docs/proxy.md shows how. Then only proxies whose own NAT
// accepts the probe's packets connect, which is what "unrestricted" means
// to the broker: such a proxy can serve clients behind restrictive NATs.
package natprobe
