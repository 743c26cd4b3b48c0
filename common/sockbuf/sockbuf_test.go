//go:build linux

package sockbuf

import (
	"net"
	"syscall"
	"testing"

	"github.com/flurrypt/flurry/common/udpbatch"
)

// TestListenUDPEnlargesBuffers opens a loopback socket through Net and reads
// its receive buffer size back from the kernel.
func TestListenUDPEnlargesBuffers(t *testing.T) {
	n, err := Net(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := c.(*udpbatch.Conn); !ok {
		t.Errorf("ListenUDP gave a %T, want a *udpbatch.Conn (this kernel has UDP GSO)", c)
	}
	mc, err := n.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(224, 0, 0, 251)})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if _, ok := mc.(*net.UDPConn); !ok {
		t.Errorf("ListenUDP on a multicast group gave a %T, want the plain socket", mc)
	}
	plain, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	got, def := rcvbuf(t, c.(syscall.Conn)), rcvbuf(t, plain)
	// The kernel caps the request at net.core.rmem_max, which may be the
	// default; it never makes the buffer smaller.
	if got < def {
		t.Errorf("receive buffer %d bytes, smaller than the default %d", got, def)
	}
	t.Logf("receive buffer %d bytes (default %d)", got, def)

	pc, err := n.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if got := rcvbuf(t, pc.(syscall.Conn)); got < def {
		t.Errorf("ListenPacket: receive buffer %d bytes, smaller than the default %d", got, def)
	}
}

func rcvbuf(t *testing.T, c syscall.Conn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var size int
	var serr error
	if err := raw.Control(func(fd uintptr) {
		size, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF)
	}); err != nil {
		t.Fatal(err)
	}
	if serr != nil {
		t.Fatal(serr)
	}
	return size
}

// TestHostNetListsInterfaces checks that the host's network still lists
// the loopback interface, looked up afresh.
func TestHostNetListsInterfaces(t *testing.T) {
	n, err := Net(nil)
	if err != nil {
		t.Fatal(err)
	}
	ifs, err := n.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, ifi := range ifs {
		if ifi.Flags&net.FlagLoopback != 0 {
			found = true
			if _, err := n.InterfaceByName(ifi.Name); err != nil {
				t.Errorf("InterfaceByName(%q): %v", ifi.Name, err)
			}
			if _, err := n.InterfaceByIndex(ifi.Index); err != nil {
				t.Errorf("InterfaceByIndex(%d): %v", ifi.Index, err)
			}
		}
	}
	if !found {
		t.Error("no loopback interface listed")
	}
}
