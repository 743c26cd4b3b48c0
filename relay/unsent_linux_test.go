package relay

import (
	"net"
	"syscall"
	"testing"
)

// TestLimitUnsent: limitUnsent sets TCP_NOTSENT_LOWAT on a TCP socket and
// leaves conns that are not sockets alone.
func TestLimitUnsent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()

	lowat := func(c net.Conn) int {
		t.Helper()
		rc, err := c.(syscall.Conn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		var v int
		var serr error
		if err := rc.Control(func(fd uintptr) {
			v, serr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotSentLowat)
		}); err != nil {
			t.Fatal(err)
		}
		if serr != nil {
			t.Fatal(serr)
		}
		return v
	}
	before := lowat(server)
	limitUnsent(server)
	if got := lowat(server); got != carrierUnsentLimit {
		t.Fatalf("TCP_NOTSENT_LOWAT = %d (was %d), want %d", got, before, carrierUnsentLimit)
	}

	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	limitUnsent(a) // not a socket: nothing to do, no panic
}
