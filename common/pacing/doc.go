// Package pacing spaces out the datagrams that a UDP socket sends to a
// destination, at a rate that the sender of the traffic sets: what Linux's
// fq qdisc does for a TCP socket's pacing rate, for pion's SCTP, which sends
// whatever its congestion window allows in one burst.
//
// A Registry wraps a pion network (Registry.Net). Every UDP socket it opens
// looks up the destination of each datagram it sends; when a Pacer is
// registered for it (Registry.Pace), the datagram waits for its turn at the
// Pacer's rate, in the sending goroutine. A burst of up to Burst waits for
// nothing, so that the sender is not woken for every datagram at high
// rates; a rate of zero, or one of MaxRate and above, paces nothing.
// Destinations without a Pacer are not touched.
//
// A bottleneck with a short queue (a mobile link's, tens of milliseconds)
// drops much of a burst of a window's worth of packets; spaced at the rate
// the path delivers, the same packets pass. Nothing on the wire changes but
// when each datagram leaves.
package pacing
