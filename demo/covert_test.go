package demo_test

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/theodorsm/covert-dtls/pkg/fingerprints"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/turntest"
)

// TestChainCovertDTLS downloads through the chain with the same covert
// DTLS mode on client and proxies, for every mode Snowflake has and for a
// raw fingerprint, and with different modes on each side, as flags on the proxies and the client (the bridge-line
// arguments are tested in package client).
func TestChainCovertDTLS(t *testing.T) {
	skipShort(t)
	for _, tc := range []struct{ name, mode, clientMode, fingerprint string }{
		{"disable", "disable", "", ""},
		{"mimic", "mimic", "", ""},
		{"randomize", "randomize", "", ""},
		{"randomizemimic", "randomizemimic", "", ""},
		{"fingerprint", "mimic", "", string(fingerprints.Mozilla_Firefox_125_0_1)},
		// Client and proxy need not agree.
		{"proxy mimic, client disable", "mimic", "disable", ""},
		{"proxy randomize, client mimic", "randomize", "mimic", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.clientMode == "" {
				tc.clientMode = tc.mode
			}
			proxyArgs := []string{"-covertdtls-config", tc.mode}
			clientArgs := []string{"-covertdtls-config", tc.clientMode}
			if tc.fingerprint != "" {
				proxyArgs = append(proxyArgs, "-covertdtls-fingerprint", tc.fingerprint)
				clientArgs = append(clientArgs, "-covertdtls-fingerprint", tc.fingerprint)
			}
			c := startCluster(t, demo.Config{Proxies: 1, FileSize: 2 << 20, ProxyArgs: proxyArgs, ClientArgs: clientArgs})
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			res := startTransfer(ctx, c).wait(t, c)
			if res.Bytes != 2<<20 {
				t.Errorf("got %d bytes, want %d", res.Bytes, 2<<20)
			}
		})
	}
}

// TestChainThroughTURN runs the client in a network namespace whose UDP
// is dropped (nftables): its only way to a proxy is a TURN server over TCP
// (internal/testkit/turntest, pion/turn) on the namespace's peer address. A
// download through the chain must arrive intact, through a relay
// allocation on the TURN server.
func TestChainThroughTURN(t *testing.T) {
	n := newNetns(t)
	nft := needCommand(t, "nft", "nftables")
	if out, err := exec.Command(n.ip, "netns", "exec", n.name, nft,
		"add table inet flurry; add chain inet flurry out { type filter hook output priority 0 ; } ; add rule inet flurry out meta l4proto udp drop").CombinedOutput(); err != nil {
		t.Fatalf("nft: %v: %s", err, out)
	}
	turn := turntest.Start(t, netip.MustParseAddr(n.hostAddr), "flurry", "p@ss,word")
	c := startCluster(t, demo.Config{BrokerHost: n.hostAddr, OpenWebRTC: true, NoClient: true, Proxies: 1, FileSize: 5 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	socks := net.JoinHostPort(n.nsAddr, "1080")
	clientLog := startNetnsClient(ctx, t, n.ip, n.name, socks, c.BrokerURL, turn.URL)
	res, err := demo.FetchTarget(ctx, socks, c.Target, nil)
	if err != nil {
		t.Fatalf("download with UDP blocked: %v", err)
	}
	if turn.Allocations() == 0 {
		t.Error("no TURN allocation: the download did not go through the TURN server")
	}
	if b, _ := os.ReadFile(clientLog); strings.Contains(string(b), "p@ss") {
		t.Error("the client logged the TURN password")
	}
	t.Logf("%s with UDP blocked, through TURN over TCP, in %v, SHA-256 matches", demo.FormatBytes(float64(res.Bytes)), res.Total.Round(time.Millisecond))
}
