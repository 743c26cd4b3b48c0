package main

// Tests of tor's upstream proxy (TOR_PT_PROXY) and -socks5-proxy, with the
// test SOCKS5 proxy of internal/testkit/socks5test on loopback.

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/socks5test"
	"github.com/flurrypt/flurry/messages"
)

// ptProcess is the binary run as tor runs a managed transport.
type ptProcess struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	lines   chan string // stdout, line by line; closed at EOF
	stderr  bytes.Buffer
	exited  chan struct{}
	exitErr error
}

// startPT runs bin with tor's environment plus env.
func startPT(tb testing.TB, bin string, args []string, env ...string) *ptProcess {
	tb.Helper()
	state := tb.TempDir()
	p := &ptProcess{cmd: exec.Command(bin, args...), lines: make(chan string, 64), exited: make(chan struct{})}
	p.cmd.Env = append(os.Environ(),
		"TOR_PT_MANAGED_TRANSPORT_VER=1",
		"TOR_PT_CLIENT_TRANSPORTS=snowflake",
		"TOR_PT_STATE_LOCATION="+state,
		"TOR_PT_EXIT_ON_STDIN_CLOSE=1",
	)
	p.cmd.Env = append(p.cmd.Env, env...)
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		tb.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	go func() { p.exitErr = p.cmd.Wait(); close(p.exited) }()
	tb.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = p.cmd.Process.Kill()
			<-p.exited
		}
		if tb.Failed() {
			tb.Logf("stderr:\n%s", p.stderr.String())
		}
	})
	return p
}

// readUntil returns the stdout lines up to and including the first one
// for which stop is true (or all of them, if stdout closes first).
func (p *ptProcess) readUntil(tb testing.TB, stop func(string) bool) []string {
	tb.Helper()
	var got []string
	timeout := time.NewTimer(hangGuard)
	defer timeout.Stop()
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return got
			}
			tb.Logf("stdout: %s", l)
			got = append(got, l)
			if stop(l) {
				return got
			}
		case <-timeout.C:
			tb.Fatalf("no expected line on stdout; got %q", got)
		}
	}
}

// exitCode waits for the process and returns its exit status.
func (p *ptProcess) exitCode(tb testing.TB) int {
	tb.Helper()
	select {
	case <-p.exited:
	case <-time.After(hangGuard):
		tb.Fatal("the client did not exit")
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.ExitCode()
	}
	if p.exitErr != nil {
		tb.Fatal(p.exitErr)
	}
	return 0
}

// TestManagedPTProxy runs the binary under tor's environment with
// TOR_PT_PROXY pointing at a SOCKS5 proxy: it must test a UDP ASSOCIATE,
// print PROXY DONE before its CMETHOD, and carry a SOCKS connection through
// the chain with the broker request and every WebRTC packet going through
// the proxy.
func TestManagedPTProxy(t *testing.T) {
	bin := buildBinary(t)
	brokerURL := startChain(t)
	socks, err := socks5test.New(socks5test.Config{Username: "tor", Password: "pt"})
	if err != nil {
		t.Fatal(err)
	}
	defer socks.Close()

	log := filepath.Join(t.TempDir(), "client.log")
	p := startPT(t, bin, []string{"-loopback-only", "-log", log, "-unsafe-logging"}, "TOR_PT_PROXY="+socks.URL())
	defer func() {
		if t.Failed() {
			b, _ := os.ReadFile(log)
			t.Logf("log:\n%s", b)
		}
	}()
	lines := p.readUntil(t, func(l string) bool { return l == "CMETHODS DONE" })
	cmethod := regexp.MustCompile(`^CMETHOD snowflake socks5 (127\.0\.0\.1:\d+)$`)
	proxyDone, socksAddr := -1, ""
	for i, l := range lines {
		switch {
		case l == "PROXY DONE":
			proxyDone = i
		case cmethod.MatchString(l):
			socksAddr = cmethod.FindStringSubmatch(l)[1]
			if proxyDone < 0 {
				t.Error("CMETHOD before PROXY DONE")
			}
		}
	}
	if proxyDone < 0 || socksAddr == "" {
		t.Fatalf("PROXY DONE at line %d, CMETHOD address %q", proxyDone, socksAddr)
	}
	if st := socks.Stats(); st.Associations != 1 {
		t.Errorf("%d associations before any connection, want the one startup test", st.Associations)
	}
	go func() {
		for range p.lines {
		}
	}()

	socksEcho(t, socksAddr, "url="+brokerURL+";fingerprint="+messages.DefaultBridgeFingerprint, "\x00")

	st := socks.Stats()
	t.Logf("SOCKS5 proxy stats: %+v", st)
	if st.Connects < 1 {
		t.Errorf("the broker request did not go through the proxy (%d CONNECTs)", st.Connects)
	}
	if st.Associations < 2 || st.DatagramsOut < 20 || st.DatagramsIn < 20 {
		t.Errorf("WebRTC did not go through the proxy: %+v", st)
	}
	if st.Refused != 0 {
		t.Errorf("the proxy refused %d requests or datagrams", st.Refused)
	}

	p.stdin.Close()
	if code := p.exitCode(t); code != 0 {
		t.Errorf("exit status %d after stdin closed", code)
	}
}

// TestManagedPTProxyError: a TOR_PT_PROXY that is not socks5, or a SOCKS5
// proxy that refuses UDP ASSOCIATE or is not there, gets PROXY-ERROR and
// exit status 1, before any CMETHOD.
func TestManagedPTProxyError(t *testing.T) {
	bin := buildBinary(t)
	noUDP, err := socks5test.New(socks5test.Config{RefuseUDP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer noUDP.Close()
	closedPort := freePort(t)

	tests := []struct {
		name, proxy, want string
	}{
		{"http proxy", "http://127.0.0.1:8080", "socks5"},
		{"socks4a proxy", "socks4a://127.0.0.1:1080", "socks5"},
		{"no UDP ASSOCIATE", noUDP.URL(), "command not supported"},
		{"nothing listening", "socks5://" + closedPort, "UDP ASSOCIATE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := startPT(t, bin, nil, "TOR_PT_PROXY="+tt.proxy)
			lines := p.readUntil(t, func(l string) bool { return strings.HasPrefix(l, "PROXY-ERROR ") })
			last := ""
			if len(lines) > 0 {
				last = lines[len(lines)-1]
			}
			if !strings.HasPrefix(last, "PROXY-ERROR ") || !strings.Contains(last, tt.want) {
				t.Errorf("last line %q, want PROXY-ERROR mentioning %q", last, tt.want)
			}
			for _, l := range lines {
				if strings.HasPrefix(l, "CMETHOD") || l == "PROXY DONE" {
					t.Errorf("unexpected %q", l)
				}
			}
			if code := p.exitCode(t); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
		})
	}
}

// TestPlainSOCKSProxyChecked: with -socks, a -socks5-proxy without UDP
// support is refused at startup.
func TestPlainSOCKSProxyChecked(t *testing.T) {
	bin := buildBinary(t)
	noUDP, err := socks5test.New(socks5test.Config{RefuseUDP: true})
	if err != nil {
		t.Fatal(err)
	}
	defer noUDP.Close()
	out, err := exec.Command(bin, "-url", "http://127.0.0.1:1/", "-socks", "127.0.0.1:0", "-socks5-proxy", noUDP.URL()).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Errorf("exit %v, want status 1", err)
	}
	if !strings.Contains(string(out), "UDP ASSOCIATE") {
		t.Errorf("output does not explain the proxy failure:\n%s", out)
	}
	out, err = exec.Command(bin, "-url", "http://127.0.0.1:1/", "-socks", "127.0.0.1:0", "-socks5-proxy", "http://127.0.0.1:8080").CombinedOutput()
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "socks5") {
		t.Errorf("an http -socks5-proxy: exit %v, output:\n%s", err, out)
	}
	help, _ := exec.Command(bin, "-h").CombinedOutput()
	if !strings.Contains(string(help), "Socks5Proxy") || !strings.Contains(string(help), "-socks5-proxy") {
		t.Errorf("-h does not explain the proxy options:\n%s", help)
	}
}
