// Package netlab is Flurry's network lab: two network namespaces joined by
// a user-space middlebox in this process, so that tests and measurements can
// put a client behind a slow, lossy or censored path.
//
//	namespace <name>c (client side)          namespace <name>o (outside)
//	198.51.100.2/24, default route           203.0.113.1/24 + .2 .. .9/32
//	       │ TUN <name>-c                             │ TUN <name>-o
//	       └────────▶ box (this process) ◀────────────┘
//	         read ─▶ censor.Program ─▶ path (delay, jitter, loss, rate) ─▶ write
//
// New opens both TUN devices in the root namespace and moves them into the
// namespaces; one goroutine reads each device, and one scheduler per
// direction (a time-ordered queue with one timer) writes packets out when
// they are due. A censor program judges every packet before shaping. Stats
// counts packets in, dropped (by the censor, by loss, by queue overflow)
// and delivered, per direction.
//
// Programs run in a namespace with Command (ip netns exec); in-process code
// listens and dials there with Do. TCPReference measures a plain TCP
// download through the box, the figure Flurry's chains are compared with.
//
// New needs root. The lab touches nothing outside its two namespaces and
// the two devices, and Close removes them.
package netlab
