// Package chainload measures whole chains (client, proxy, broker, relay)
// from the outside:
//
//   - RunChain connects through a SOCKS5 proxy (a running flurry-client)
//     and measures throughput and time to first byte of HTTP GETs or raw
//     reads and echoes.
//   - RunSideBySide starts one chain per implementation (Flurry's binaries,
//     Snowflake's; package chainproc) and downloads through each in turn:
//     MB/s, CPU per MB per process, peak RSS, pauses, UDP drops.
//   - RunProxyUsers starts each implementation's chain in turn and runs 1,
//     10, 50 users (package manyusers) through its one proxy: the proxy's
//     memory, CPU per MB, starvation.
//
// The side-by-side runs must run in a network namespace whose only
// interface is loopback.
package chainload
