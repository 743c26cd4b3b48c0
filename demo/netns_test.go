package demo_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/internal/testkit/tortest"
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

// removeStale deletes what a test run that died before its cleanup (with
// the same process id, so the same names) may have left.
func removeStale(ip string, namespaces []string, link string) {
	for _, ns := range namespaces {
		_ = exec.Command(ip, "netns", "del", ns).Run()
	}
	_ = exec.Command(ip, "link", "del", link).Run()
}

// needNetns skips the test where network namespaces cannot be made
// (-short, not root, no ip command) and returns the ip command's path.
func needNetns(t *testing.T) string {
	t.Helper()
	skipShort(t)
	if os.Geteuid() != 0 {
		testenv.Root(t, "network namespaces")
	}
	return needCommand(t, "ip", "iproute2")
}

// needCommand returns the path of an administration command, found in
// PATH or, where PATH lacks them, in the sbin directories; or it stops the
// test (testenv.Missing) naming the Debian package that has it.
func needCommand(t *testing.T, name, debianPackage string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	testenv.Missing(t, "no %s command (apt-get install %s): %v", name, debianPackage, err)
	return ""
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// newNetns makes the namespace and removes it when the test ends. It skips
// the test where namespaces cannot be made (not root, no ip command).
func newNetns(t *testing.T) *netns {
	t.Helper()
	ip := needNetns(t)
	id := fmt.Sprint(os.Getpid() % 100000)
	n := &netns{ip: ip, name: "flurry-" + id, hostAddr: "198.51.100.1", nsAddr: "198.51.100.2"}
	hostIf, nsIf := "flh"+id, "fln"+id
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	removeStale(ip, []string{n.name}, hostIf)
	if out, err := exec.Command(ip, "netns", "add", n.name).CombinedOutput(); err != nil {
		testenv.Missing(t, "cannot make a network namespace here: %v: %s", err, out)
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
	userAddr := tortest.GrepFile(chain.bridge.DebugLog, "USERADDR")
	if !containsAny(userAddr, ns.nsAddr) {
		t.Errorf("the bridge's tor did not receive USERADDR %s (debug log lines with USERADDR: %q)", ns.nsAddr, userAddr)
	} else {
		t.Logf("bridge tor: %s", firstContaining(userAddr, ns.nsAddr))
	}
}

// natNetns is a client behind a NAT: a client namespace (clientAddr, in
// 10.254.253.0/24, a private range) whose default route is a router
// namespace that masquerades it (nftables) behind routerAddr
// (198.51.100.3), on a veth link to this machine's hostAddr
// (198.51.100.1). Neither namespace has a route beyond these two links.
// This machine reaches clientAddr through the router (for the test's own
// SOCKS connection to the client); the client's WebRTC sees the NAT.
type natNetns struct {
	ip                               string
	router, client                   string // namespace names
	hostAddr, routerAddr, clientAddr string
}

// newNATNetns makes the two namespaces and removes them when the test
// ends. It skips the test where that cannot be done (not root, no ip or nft
// command, namespaces refused).
func newNATNetns(t *testing.T) *natNetns {
	t.Helper()
	ip := needNetns(t)
	nft := needCommand(t, "nft", "nftables")
	id := fmt.Sprint(os.Getpid() % 100000)
	n := &natNetns{ip: ip, router: "flurry-r" + id, client: "flurry-c" + id,
		hostAddr: "198.51.100.1", routerAddr: "198.51.100.3", clientAddr: "10.254.253.2"}
	hostIf, pubIf, privIf, clientIf := "flh"+id, "flr"+id, "flp"+id, "flc"+id
	run := func(name string, args ...string) {
		t.Helper()
		if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
			t.Fatalf("%s %s: %v: %s", name, strings.Join(args, " "), err, out)
		}
	}
	removeStale(ip, []string{n.client, n.router}, hostIf)
	if out, err := exec.Command(ip, "netns", "add", n.router).CombinedOutput(); err != nil {
		testenv.Missing(t, "cannot make a network namespace here: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = exec.Command(ip, "netns", "del", n.client).Run()
		_ = exec.Command(ip, "netns", "del", n.router).Run()
		_ = exec.Command(ip, "link", "del", hostIf).Run()
		_ = exec.Command(ip, "route", "del", "10.254.253.0/24").Run()
	})
	run(ip, "netns", "add", n.client)
	// This machine <-> router, the "public" side.
	run(ip, "link", "add", hostIf, "type", "veth", "peer", "name", pubIf)
	run(ip, "link", "set", pubIf, "netns", n.router)
	run(ip, "addr", "add", n.hostAddr+"/24", "dev", hostIf)
	run(ip, "link", "set", hostIf, "up")
	run(ip, "-n", n.router, "addr", "add", n.routerAddr+"/24", "dev", pubIf)
	run(ip, "-n", n.router, "link", "set", pubIf, "up")
	// Router <-> client, the private side.
	run(ip, "-n", n.router, "link", "add", privIf, "type", "veth", "peer", "name", clientIf)
	run(ip, "-n", n.router, "link", "set", clientIf, "netns", n.client)
	run(ip, "-n", n.router, "addr", "add", "10.254.253.1/24", "dev", privIf)
	run(ip, "-n", n.router, "link", "set", privIf, "up")
	run(ip, "-n", n.client, "addr", "add", n.clientAddr+"/24", "dev", clientIf)
	run(ip, "-n", n.client, "link", "set", clientIf, "up")
	run(ip, "-n", n.client, "link", "set", "lo", "up")
	run(ip, "-n", n.client, "route", "add", "default", "via", "10.254.253.1")
	// The router forwards and masquerades what leaves on the public side.
	run(ip, "netns", "exec", n.router, "sysctl", "-q", "-w", "net.ipv4.ip_forward=1")
	run(ip, "netns", "exec", n.router, nft, "add table ip nat; add chain ip nat post { type nat hook postrouting priority 100 ; } ; add rule ip nat post oifname "+pubIf+" masquerade")
	// This machine reaches the client's SOCKS port through the router.
	_ = exec.Command(ip, "route", "del", "10.254.253.0/24").Run() // a stale one
	run(ip, "route", "add", "10.254.253.0/24", "via", n.routerAddr)
	return n
}

// TestChainFromBehindNAT runs a client as production does (no
// -loopback-only, a STUN server) behind a real NAT, here a masquerading
// router namespace: its only address is private, so its offer must carry
// the server-reflexive address the STUN server reports (the router's) and
// nothing else, and the proxy must reach it through the NAT. A 5 MiB
// download through the chain must arrive intact.
func TestChainFromBehindNAT(t *testing.T) {
	n := newNATNetns(t)
	stunURL := stuntest.StartOn(t, netip.MustParseAddr(n.hostAddr))
	c := startCluster(t, demo.Config{BrokerHost: n.hostAddr, OpenWebRTC: true, NoClient: true, FileSize: 5 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	socks := net.JoinHostPort(n.clientAddr, "1080")
	startNetnsClient(ctx, t, n.ip, n.client, socks, c.BrokerURL, stunURL)
	res, err := demo.FetchTarget(ctx, socks, c.Target, nil)
	if err != nil {
		t.Fatalf("download from behind the NAT: %v", err)
	}
	t.Logf("%s from behind a NAT in %v, SHA-256 matches", demo.FormatBytes(float64(res.Bytes)), res.Total.Round(time.Millisecond))
}

// startNetnsClient runs flurry-client in the network namespace ns (with
// the ip command at ip) as a SOCKS proxy on socks, for brokerURL and the
// ICE server ice, and returns its log's path. It stops when the test
// ends; a failed test shows the log's tail.
func startNetnsClient(ctx context.Context, t *testing.T, ip, ns, socks, brokerURL, ice string) string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "client.log")
	client, err := childproc.Start(ctx, childproc.Config{
		Name: "client", Path: ip, LogPath: logPath,
		Supervisor: "demo",
		Args: []string{"netns", "exec", ns, binaries(t).Client,
			"-socks", socks, "-url", brokerURL, "-ice", ice, "-unsafe-logging"},
		Ready: demo.TCPReady(socks),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stopClean(t, client)
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("==== client log\n%s", tail(string(b), 60))
		}
	})
	return logPath
}
