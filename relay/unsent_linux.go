package relay

import (
	"net"
	"syscall"
)

// tcpNotSentLowat is Linux's TCP_NOTSENT_LOWAT socket option.
const tcpNotSentLowat = 25

// limitUnsent bounds the bytes a carrier's socket holds not yet sent
// (TCP_NOTSENT_LOWAT, carrierUnsentLimit). Without it the kernel lets the
// send buffer grow to megabytes on loopback or a fast link, and what a
// client's proxy cannot take yet waits there: seconds at a long path's
// 1-2 MB/s, all counted in KCP's round trip, which KCP (no congestion
// control) times out and sends again. With it the backlog stays in the
// client's turbotunnel queue (512 packets). Only when the writer's writes
// block changes, nothing on the wire. Best effort: a conn that is not a
// socket is left alone.
func limitUnsent(c net.Conn) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotSentLowat, carrierUnsentLimit)
	})
}
