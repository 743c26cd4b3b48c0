package relay

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

const torPath = "/usr/bin/tor"

// buildRelay builds flurry-relay into dir and returns its path.
func buildRelay(tb testing.TB, dir string) string {
	tb.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		testenv.Missing(tb, "no go command to build flurry-relay: %v", err)
	}
	bin := filepath.Join(dir, "flurry-relay")
	cmd := exec.Command(goBin, "build", "-o", bin, "./cmd/flurry-relay")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build flurry-relay: %v\n%s", err, out)
	}
	return bin
}

// freePort returns a loopback TCP port that was free a moment ago, below
// the ephemeral ports (demo.FreeAddr).
func freePort(tb testing.TB) int {
	tb.Helper()
	addr, err := demo.FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(addr)
	n, err := strconv.Atoi(port)
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestTorManagedTransport has Debian's tor start flurry-relay as its
// snowflake server transport, then sends a TLS handshake through a
// Snowflake-style client, the relay and tor's ExtORPort, and expects tor's
// ORPort to complete it.
func TestTorManagedTransport(t *testing.T) {
	if _, err := os.Stat(torPath); err != nil {
		testenv.Missing(t, "tor is not installed (%s: %v); install Debian's tor package to run this test", torPath, err)
	}
	dir := t.TempDir()
	bin := buildRelay(t, dir)
	port := freePort(t)
	dataDir := filepath.Join(dir, "tor")
	if err := os.Mkdir(dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	relayLog := filepath.Join(dir, "relay.log")
	// Only loopback: a fake directory authority on a closed loopback port
	// replaces the real ones, and no fallback directories.
	torrc := fmt.Sprintf(`DataDirectory %s
BridgeRelay 1
ORPort 127.0.0.1:auto
ExtORPort auto
ServerTransportPlugin snowflake exec %s -disable-tls -log %s -unsafe-logging -num-turbotunnel 2
ServerTransportListenAddr snowflake 127.0.0.1:%d
PublishServerDescriptor 0
AssumeReachable 1
SocksPort 0
ControlPort 0
Nickname flurrytest
ContactInfo flurry-test@example.invalid
UseDefaultFallbackDirs 0
DirAuthority fake orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002
ShutdownWaitLength 0
Log notice stdout
`, dataDir, bin, relayLog, port)
	torrcPath := filepath.Join(dir, "torrc")
	if err := os.WriteFile(torrcPath, []byte(torrc), 0o600); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, torPath, "-f", torrcPath, "--defaults-torrc", os.DevNull)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var torLog strings.Builder
	registered := make(chan struct{})
	logDone := make(chan struct{})
	go func() {
		defer close(logDone)
		sc := bufio.NewScanner(stdout)
		once := false
		for sc.Scan() {
			line := sc.Text()
			torLog.WriteString(line + "\n")
			if !once && strings.Contains(line, "Registered server transport 'snowflake'") {
				once = true
				close(registered)
			}
		}
	}()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() {
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
			}
		}()
		<-logDone
		cmd.Wait()
		close(done)
		if t.Failed() {
			t.Logf("tor log:\n%s", torLog.String())
			if b, err := os.ReadFile(relayLog); err == nil {
				t.Logf("relay log:\n%s", b)
			}
		}
	}()

	select {
	case <-registered:
	case <-logDone:
		t.Fatal("tor exited before registering the snowflake transport")
	case <-ctx.Done():
		t.Fatal("tor did not register the snowflake transport in time")
	}

	wsURL := fmt.Sprintf("ws://127.0.0.1:%d/?client_ip=192.0.2.7", port)
	pconn := newTestPacketConn(turbotunnel.NewClientID())
	pconn.dialCarrier(t, wsURL)
	client := newTestClient(t, pconn)
	stream, err := client.smux.OpenStream()
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	stream.SetDeadline(time.Now().Add(20 * time.Second))
	// Tor's ORPort speaks TLS with a self-signed link certificate.
	tc := tls.Client(stream, &tls.Config{InsecureSkipVerify: true, ServerName: "www.example.com"})
	if err := tc.HandshakeContext(ctx); err != nil {
		t.Fatalf("TLS handshake with tor's ORPort through the relay: %v", err)
	}
	state := tc.ConnectionState()
	if len(state.PeerCertificates) == 0 {
		t.Fatal("tor presented no certificate")
	}
	t.Logf("TLS %x with tor, certificate subject %q", state.Version, state.PeerCertificates[0].Subject.String())
	tc.Close()
	io.Copy(io.Discard, stream)
}
