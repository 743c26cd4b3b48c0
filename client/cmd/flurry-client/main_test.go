package main

// These tests build the flurry-client binary and run it as tor would, in
// front of a real broker, proxy and relay on loopback.

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/theodorsm/covert-dtls/pkg/fingerprints"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/messages"
)

// hangGuard bounds every wait; nothing is synchronised on it.
const hangGuard = 20 * time.Second

// buildBinary compiles flurry-client into a temporary directory.
func buildBinary(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "flurry-client")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startChain runs echo server, relay, broker and one proxy on loopback and
// returns the broker's URL.
func startChain(tb testing.TB) string {
	tb.Helper()
	ch := chaintest.Start(tb)
	ch.StartProxy(tb, "p1")
	return ch.BrokerURL
}

// socks5Connect performs a SOCKS5 handshake on conn, with RFC 1929
// username/password authentication when user is not empty, and a CONNECT
// to an arbitrary destination.
func socks5Connect(conn net.Conn, user, pass string) error {
	br := bufio.NewReader(conn)
	method := byte(0x00)
	if user != "" {
		method = 0x02
	}
	if _, err := conn.Write([]byte{5, 1, method}); err != nil {
		return err
	}
	var sel [2]byte
	if _, err := io.ReadFull(br, sel[:]); err != nil {
		return err
	}
	if sel[0] != 5 || sel[1] != method {
		return fmt.Errorf("server chose method %#x", sel[1])
	}
	if user != "" {
		msg := []byte{1, byte(len(user))}
		msg = append(msg, user...)
		msg = append(msg, byte(len(pass)))
		msg = append(msg, pass...)
		if _, err := conn.Write(msg); err != nil {
			return err
		}
		var st [2]byte
		if _, err := io.ReadFull(br, st[:]); err != nil {
			return err
		}
		if st[1] != 0 {
			return fmt.Errorf("authentication failed")
		}
	}
	// CONNECT 192.0.2.1:443: the destination is not used.
	req := []byte{5, 1, 0, 1, 192, 0, 2, 1, 0, 0}
	binary.BigEndian.PutUint16(req[8:], 443)
	if _, err := conn.Write(req); err != nil {
		return err
	}
	var rep [10]byte
	if _, err := io.ReadFull(br, rep[:]); err != nil {
		return fmt.Errorf("read CONNECT reply: %w", err)
	}
	if rep[1] != 0 {
		return fmt.Errorf("CONNECT rejected with code %d", rep[1])
	}
	if br.Buffered() > 0 {
		return fmt.Errorf("unexpected data after the reply")
	}
	return nil
}

// socksEcho connects through the SOCKS5 server at addr (with user and
// pass, if any) and checks that 256 KiB come back.
func socksEcho(tb testing.TB, addr, user, pass string) {
	tb.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close()
	if err := socks5Connect(conn, user, pass); err != nil {
		tb.Fatal(err)
	}
	echoCheck(tb, conn, 256<<10)
}

// freePort returns a loopback address where nothing listens (for now),
// below the ephemeral ports (demo.FreeAddr).
func freePort(tb testing.TB) string {
	tb.Helper()
	addr, err := demo.FreeAddr()
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// echoCheck sends size random bytes over conn and checks they come back.
func echoCheck(tb testing.TB, conn net.Conn, size int) {
	tb.Helper()
	_ = conn.SetDeadline(time.Now().Add(hangGuard))
	data := make([]byte, size)
	_, _ = rand.Read(data)
	errc := make(chan error, 1)
	go func() {
		_, err := conn.Write(data)
		errc <- err
	}()
	got := make([]byte, size)
	if _, err := io.ReadFull(conn, got); err != nil {
		tb.Fatalf("read echo: %v", err)
	}
	if err := <-errc; err != nil {
		tb.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, data) {
		tb.Fatal("echo differs")
	}
}

// TestManagedPT runs the binary with tor's environment and a bridge line
// passed as SOCKS arguments.
func TestManagedPT(t *testing.T) {
	bin := buildBinary(t)
	brokerURL := startChain(t)
	state := t.TempDir()

	cmd := exec.Command(bin, "-loopback-only", "-log", filepath.Join(state, "client.log"), "-unsafe-logging")
	cmd.Env = append(os.Environ(),
		"TOR_PT_MANAGED_TRANSPORT_VER=1",
		"TOR_PT_CLIENT_TRANSPORTS=snowflake,obfs4",
		"TOR_PT_STATE_LOCATION="+state,
		"TOR_PT_EXIT_ON_STDIN_CLOSE=1",
	)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var exitErr error
	go func() { exitErr = cmd.Wait(); close(exited) }()
	defer func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(state, "client.log"))
			t.Logf("stderr:\n%s\nlog:\n%s", stderr.String(), log)
		}
	}()

	// Read the PT protocol lines up to CMETHODS DONE; LOG and STATUS lines
	// may come in between.
	lines := make(chan string, 64)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	cmethod := regexp.MustCompile(`^CMETHOD snowflake socks5 (127\.0\.0\.1:\d+)$`)
	var socksAddr string
	var sawVersion, sawObfs4Error bool
	timeout := time.NewTimer(hangGuard)
	defer timeout.Stop()
	for done := false; !done; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("stdout closed before CMETHODS DONE")
			}
			t.Logf("stdout: %s", l)
			switch {
			case l == "VERSION 1":
				sawVersion = true
			case cmethod.MatchString(l):
				socksAddr = cmethod.FindStringSubmatch(l)[1]
			case strings.HasPrefix(l, "CMETHOD-ERROR obfs4 "):
				sawObfs4Error = true
			case l == "CMETHODS DONE":
				done = true
			}
		case <-timeout.C:
			t.Fatal("no CMETHODS DONE")
		}
	}
	if !sawVersion || socksAddr == "" || !sawObfs4Error {
		t.Fatalf("VERSION 1 seen: %v, CMETHOD address %q, obfs4 CMETHOD-ERROR: %v", sawVersion, socksAddr, sawObfs4Error)
	}
	// Keep draining stdout (LOG lines for events).
	go func() {
		for l := range lines {
			_ = l
		}
	}()

	// tor puts the bridge line's arguments in the SOCKS username and
	// password fields, ';'-separated.
	socksEcho(t, socksAddr, "url="+brokerURL+";max=1;fingerprint="+messages.DefaultBridgeFingerprint, "\x00")

	// A bridge line with a bad argument is refused.
	conn2, err := net.Dial("tcp", socksAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn2.Close()
	if err := socks5Connect(conn2, "url="+brokerURL+";max=two", "\x00"); err == nil {
		t.Error("a bridge line with max=two was accepted")
	}

	// Closing stdin makes the client exit.
	stdin.Close()
	select {
	case <-exited:
		if exitErr != nil {
			t.Errorf("exit: %v", exitErr)
		}
	case <-time.After(hangGuard):
		_ = cmd.Process.Signal(syscall.SIGQUIT) // goroutine dump on stderr
		<-exited
		t.Fatal("the client did not exit after stdin closed")
	}
}

// TestPlainSOCKS runs the binary without tor, as a SOCKS5 proxy.
func TestPlainSOCKS(t *testing.T) {
	bin := buildBinary(t)
	brokerURL := startChain(t)

	addr := freePort(t) // for -socks

	cmd := exec.Command(bin, "-url", brokerURL, "-loopback-only", "-socks", addr)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	}()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "SOCKS5 proxy on") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(hangGuard):
		t.Fatal("SOCKS listener did not start")
	}
	socksEcho(t, addr, "", "")
}

// TestUsage checks that nothing defaults to a public broker: without -url
// the client says what to set and shows an example bridge line.
func TestUsage(t *testing.T) {
	bin := buildBinary(t)
	out, err := exec.Command(bin, "-socks", "127.0.0.1:0").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("exit %v, want status 2", err)
	}
	if !strings.Contains(string(out), "set -url") || !strings.Contains(string(out), "Bridge snowflake ") {
		t.Errorf("output does not explain -url:\n%s", out)
	}
	help, _ := exec.Command(bin, "-h").CombinedOutput()
	if !strings.Contains(string(help), "NOT used") {
		t.Errorf("-h does not say the CONNECT destination is unused:\n%s", help)
	}
}

// TestCovertDTLSFlags: the default is mimic; every Snowflake mode is
// taken, with a raw fingerprint too; an unknown mode or a fingerprint that
// is not a hello is an error naming the flags.
func TestCovertDTLSFlags(t *testing.T) {
	c, _, err := parseFlags(flag.NewFlagSet("t", flag.ContinueOnError), []string{"-url", "https://broker.test/"})
	if err != nil || c.CovertDTLS.Mode != covertdtls.Mimic {
		t.Errorf("default covert DTLS mode %v (err %v), want mimic", c.CovertDTLS.Mode, err)
	}
	for _, args := range [][]string{
		{"-covertdtls-config", "disable"},
		{"-covertdtls-config", "mimic"},
		{"-covertdtls-config", "Randomize"},
		{"-covertdtls-config", "randomizemimic"},
		{"-covertdtls-config", "mimic", "-covertdtls-fingerprint", string(fingerprints.Mozilla_Firefox_125_0_1)},
	} {
		if _, _, err := parseFlags(flag.NewFlagSet("t", flag.ContinueOnError), append([]string{"-url", "https://broker.test/"}, args...)); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
	for _, args := range [][]string{
		{"-covertdtls-config", "chrome"},
		{"-covertdtls-config", "mimic", "-covertdtls-fingerprint", "fefd"},
	} {
		if _, _, err := parseFlags(flag.NewFlagSet("t", flag.ContinueOnError), args); err == nil || !strings.Contains(err.Error(), "-covertdtls-config") {
			t.Errorf("%q: error %v", args, err)
		}
	}
}
