// Package pionruntime sets the Go runtime defaults of the binaries whose
// work is pion's WebRTC stack (flurry-client and flurry-proxy): one or two
// processors (ProxyMaxProcs, ClientMaxProcs) unless the environment sets
// GOMAXPROCS. A main calls Apply first thing; its -h names the value
// (docs/performance.md, "Chain", "Many users" and "Long and lossy paths",
// has the measurements).
//
// The collector keeps Go's default target (GOGC=100). pion's DTLS and SCTP
// allocate about nine bytes per byte relayed, all short-lived; at GOGC=400
// the proxy and the client took about a sixth less CPU per MB, but the
// heap grew to five times what is live and to 16 MiB at least, and a
// proxy held 35 MiB with one user and 44 MiB with ten where Snowflake's
// holds 24 and 32 (docs/performance.md, "Many users"): volunteers run out
// of memory before CPU. GOGC=400 in the environment chooses the other way.
package pionruntime

import (
	"os"
	"runtime"
)

// ProxyMaxProcs is the proxy's GOMAXPROCS. pion's DTLS starts two
// goroutines for every record it sends and waits for one of them; with a
// second processor idle, each start also wakes a thread to look for work,
// which cost the proxy a quarter of its CPU per MB relayed. On one
// processor a proxy relays some 40 MB/s, far above what volunteers' links
// carry, and never takes more than one core of a volunteer's machine. An
// operator relaying more sets GOMAXPROCS (docs/proxy.md).
const ProxyMaxProcs = 1

// ClientMaxProcs is the client's GOMAXPROCS. A download's packets pass
// four goroutines in the client (the socket's reader, DTLS, SCTP, KCP),
// and pion's ICE agent drops what arrives while 1 MB already waits for
// DTLS: on one processor a burst faster than the client's whole
// pipeline (a proxy's startup paces at up to three times the delivery
// rate) overflowed it, and each drop stalled the download for seconds. On
// two the lab saw no such drop, for a tenth to a quarter more CPU per MB
// on loopback (docs/performance.md, "Proxy and client").
const ClientMaxProcs = 2

// Apply sets GOMAXPROCS to procs unless the environment sets it.
func Apply(procs int) {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(procs)
	}
}
