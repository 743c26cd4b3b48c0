package demo_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
)

// netns is a network namespace joined to this one by a veth pair: this
// side has hostAddr, the namespace nsAddr, both in 198.51.100.0/24
// (TEST-NET-2, RFC 5737), and the namespace has no other route. A process
// in it reaches this machine at hostAddr and nothing else, and its own
// address is one a proxy takes for a public one: the client's side of a
// real deployment, on one machine.
type netns struct {
	ip               string // path of the ip command
	name             string
	hostAddr, nsAddr string
}

// newNetns makes the namespace and removes it when the test ends. It skips
// the test where namespaces cannot be made (not root, no ip command).
func newNetns(t *testing.T) *netns {
	t.Helper()
	skipShort(t)
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		t.Skipf("no ip command (apt-get install iproute2): %v", err)
	}
	id := fmt.Sprint(os.Getpid() % 100000)
	n := &netns{ip: ip, name: "flurry-" + id, hostAddr: "198.51.100.1", nsAddr: "198.51.100.2"}
	hostIf, nsIf := "flh"+id, "fln"+id
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if out, err := exec.Command(ip, "netns", "add", n.name).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		// Deleting the namespace deletes its end of the pair, and so both.
		_ = exec.Command(ip, "netns", "del", n.name).Run()
		_ = exec.Command(ip, "link", "del", hostIf).Run()
	})
	run("link", "add", hostIf, "type", "veth", "peer", "name", nsIf)
	run("link", "set", nsIf, "netns", n.name)
	run("addr", "add", n.hostAddr+"/24", "dev", hostIf)
	run("link", "set", hostIf, "up")
	run("-n", n.name, "addr", "add", n.nsAddr+"/24", "dev", nsIf)
	run("-n", n.name, "link", "set", nsIf, "up")
	run("-n", n.name, "link", "set", "lo", "up")
	return n
}

// TestTorUserAddrFromNamespace runs the tor chain with the client's side
// (its tor and flurry-client) in a network namespace with a public-looking
// address, and proxies and client gathering candidates as in production
// (no -loopback-only). The client's offer then carries 198.51.100.2, the
// proxy passes it to the relay as client_ip, and the bridge's tor must
// receive it as USERADDR on its ExtORPort: the whole path of a client's
// address that loopback cannot show.
func TestTorUserAddrFromNamespace(t *testing.T) {
	skipWithoutTor(t)
	ns := newNetns(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	chain := startTorChain(t, ctx, torChainOptions{netns: ns})
	chain.waitBootstrap(t, ctx, 15)
	userAddr := demo.GrepFile(chain.bridge.DebugLog, "USERADDR")
	if !containsAny(userAddr, ns.nsAddr) {
		t.Errorf("the bridge's tor did not receive USERADDR %s (debug log lines with USERADDR: %q)", ns.nsAddr, userAddr)
	} else {
		t.Logf("bridge tor: %s", firstContaining(userAddr, ns.nsAddr))
	}
}
