package webrtcfp

import (
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// Netns is a network namespace joined to this one by a veth pair, for
// peers that cannot use loopback (Chromium gathers no loopback candidate
// on Linux): this side has HostAddr, the namespace NSAddr, in 198.18.0.0/15
// (RFC 2544, benchmarking), and the namespace has no other route.
type Netns struct {
	Name             string
	HostAddr, NSAddr netip.Addr
}

// NewNetns makes the namespace and removes it when the test ends. It skips
// (fails under CI=true) where namespaces cannot be made.
func NewNetns(t testing.TB) *Netns {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Root(t, "network namespaces")
	}
	ip := "/usr/sbin/ip"
	testenv.Executable(t, ip, "iproute2")
	id := os.Getpid() % 100000
	n := &Netns{
		Name:     fmt.Sprintf("flurry-fp-%d", id),
		HostAddr: netip.AddrFrom4([4]byte{198, 18, byte(id % 250), 1}),
		NSAddr:   netip.AddrFrom4([4]byte{198, 18, byte(id % 250), 2}),
	}
	hostIf, nsIf := fmt.Sprintf("fph%d", id), fmt.Sprintf("fpn%d", id)
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	// What a run that died before its cleanup (same pid) left.
	_ = exec.Command(ip, "netns", "del", n.Name).Run()
	_ = exec.Command(ip, "link", "del", hostIf).Run()
	if out, err := exec.Command(ip, "netns", "add", n.Name).CombinedOutput(); err != nil {
		testenv.Missing(t, "cannot make a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command(ip, "netns", "del", n.Name).Run()
		_ = exec.Command(ip, "link", "del", hostIf).Run()
	})
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	run("link", "set", nsIf, "netns", n.Name)
	run("addr", "add", n.HostAddr.String()+"/30", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", n.Name, "addr", "add", n.NSAddr.String()+"/30", "dev", nsIf)
	run("-n", n.Name, "link", "set", nsIf, "up")
	return n
}

// ListenUDP opens a UDP socket on NSAddr inside the namespace (a socket
// keeps the namespace it was made in).
func (n *Netns) ListenUDP() (*net.UDPConn, error) {
	type result struct {
		c   *net.UDPConn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		// This thread enters the namespace and is never unlocked, so the
		// runtime ends it with the goroutine instead of reusing it.
		runtime.LockOSThread()
		fd, err := unix.Open("/run/netns/"+n.Name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			ch <- result{err: err}
			return
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
			ch <- result{err: err}
			return
		}
		c, err := net.ListenUDP("udp4", net.UDPAddrFromAddrPort(netip.AddrPortFrom(n.NSAddr, 0)))
		ch <- result{c, err}
	}()
	r := <-ch
	return r.c, r.err
}
