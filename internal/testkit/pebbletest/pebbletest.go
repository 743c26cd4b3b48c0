// Package pebbletest runs Debian's pebble, a small ACME certificate
// authority for tests, so that a command's -acme-hostnames can be tested
// end to end on loopback: pebble really validates HTTP-01 by fetching the
// challenge from 127.0.0.1, with pebble-challtestsrv (same package) as its
// DNS server answering 127.0.0.1 for every name. The command under test
// runs as a child process of the test binary (see Main and Command).
package pebbletest

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// startTimeout bounds pebble's start and a certificate's issuance: only a
// guard against a hang.
const startTimeout = time.Minute

// CA is a running pebble.
type CA struct {
	// Directory is the ACME directory URL (the commands' -acme-directory).
	Directory string
	// CAFile is a PEM file with the CA of the directory's own TLS
	// certificate: the SSL_CERT_FILE of the command under test.
	CAFile string
	// HTTPAddr is where pebble fetches HTTP-01 challenges (the commands'
	// -acme-http-addr).
	HTTPAddr string
	// Roots holds pebble's issuing root: what the certificates it issues
	// chain to.
	Roots *x509.CertPool

	log *syncBuffer
}

// Start runs pebble and its DNS server until the test ends. Without the
// pebble package it stops the test through testenv.Missing.
func Start(t testing.TB) *CA {
	t.Helper()
	pebble := testenv.LookPath(t, "pebble", "pebble")
	challtest := testenv.LookPath(t, "pebble-challtestsrv", "pebble")
	dir := t.TempDir()
	caPEM, certPEM, keyPEM := directoryCert(t)
	ca := &CA{CAFile: filepath.Join(dir, "ca.pem"), log: &syncBuffer{}}
	for name, b := range map[string][]byte{ca.CAFile: caPEM, "cert.pem": certPEM, "key.pem": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dns := freeAddr(t)
	start(t, ca.log, challtest, "-defaultIPv4", "127.0.0.1", "-defaultIPv6", "",
		"-dns01", dns, "-management", freeAddr(t), "-http01", "", "-https01", "", "-tlsalpn01", "")

	listen, mgmt := freeAddr(t), freeAddr(t)
	ca.HTTPAddr = freeAddr(t)
	_, httpPort, _ := net.SplitHostPort(ca.HTTPAddr)
	_, tlsPort, _ := net.SplitHostPort(freeAddr(t)) // nothing listens: TLS-ALPN-01 fails, HTTP-01 is what validates
	cfg := map[string]any{"pebble": map[string]any{
		"listenAddress":           listen,
		"managementListenAddress": mgmt,
		"certificate":             filepath.Join(dir, "cert.pem"),
		"privateKey":              filepath.Join(dir, "key.pem"),
		"httpPort":                atoi(t, httpPort),
		"tlsPort":                 atoi(t, tlsPort),
		"ocspResponderURL":        "",
	}}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(dir, "pebble.json")
	if err := os.WriteFile(cfgFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
	start(t, ca.log, pebble, "-config", cfgFile, "-dnsserver", dns)
	ca.Directory = "https://" + listen + "/dir"

	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, Timeout: 5 * time.Second}
	t.Cleanup(client.CloseIdleConnections)
	deadline := time.Now().Add(startTimeout)
	var root []byte
	for {
		root, err = get(client, "https://"+mgmt+"/roots/0")
		if err == nil {
			if _, err = get(client, ca.Directory); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("pebble did not start: %v\n%s", err, ca.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	ca.Roots = x509.NewCertPool()
	if !ca.Roots.AppendCertsFromPEM(root) {
		t.Fatalf("pebble's root is not PEM: %q", root)
	}
	return ca
}

// Env returns the environment for a command under test: the test's own,
// with SSL_CERT_FILE trusting pebble's directory.
func (ca *CA) Env() []string {
	return append(os.Environ(), "SSL_CERT_FILE="+ca.CAFile)
}

// Log returns what pebble and its DNS server have written so far.
func (ca *CA) Log() string { return ca.log.String() }

// Verify connects to addr with TLS for hostname, as a client of the
// command would, until the handshake succeeds (the first ones wait for
// the certificate to be issued), and checks that the certificate chains
// to pebble's root and that pebble validated it by HTTP-01.
func (ca *CA) Verify(t testing.TB, addr, hostname string) *x509.Certificate {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		d := tls.Dialer{Config: &tls.Config{ServerName: hostname, RootCAs: ca.Roots}}
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		c, err := d.DialContext(ctx, "tcp", addr)
		cancel()
		if err == nil {
			st := c.(*tls.Conn).ConnectionState()
			c.Close()
			if !strings.Contains(ca.Log(), "validate w/ HTTP") {
				t.Errorf("pebble issued without an HTTP-01 validation:\n%s", ca.log)
			}
			return st.PeerCertificates[0]
		}
		if time.Now().After(deadline) {
			t.Fatalf("no certificate for %s at %s: %v\npebble:\n%s", hostname, addr, err, ca.log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Client returns an HTTP client that sends every request to addr,
// trusting what pebble issues, with HTTP/2 offered: a client of the command
// under test for https://hostname/.
func (ca *CA) Client(addr, hostname string) *http.Client {
	var d net.Dialer
	return &http.Client{
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, addr)
			},
			TLSClientConfig:   &tls.Config{ServerName: hostname, RootCAs: ca.Roots},
			ForceAttemptHTTP2: true,
		},
		Timeout: startTimeout,
	}
}

// ServeTLS starts the command under test (see Command) on a free loopback
// address with args and the ACME flags every command shares, for
// hostname, and returns the address once the command serves TLS with a
// certificate from pebble (see Verify).
func (ca *CA) ServeTLS(t testing.TB, hostname string, args ...string) (addr string) {
	t.Helper()
	addr = freeAddr(t)
	ca.Command(t, append([]string{"-addr", addr,
		"-acme-hostnames", hostname, "-acme-email", "ops@flurry.test",
		"-acme-cert-cache", filepath.Join(t.TempDir(), "acme"),
		"-acme-directory", ca.Directory, "-acme-http-addr", ca.HTTPAddr}, args...)...)
	cert := ca.Verify(t, addr, hostname)
	if err := cert.VerifyHostname(hostname); err != nil {
		t.Error(err)
	}
	return addr
}

// start runs pebble or its DNS server until the test ends, its output
// into log.
func start(t testing.TB, log io.Writer, path string, args ...string) {
	t.Helper()
	cmd := exec.Command(path, args...)
	// No random sleeps before validating, and no nonces refused at random:
	// the test checks issuance, not a client's retries.
	cmd.Env = append(os.Environ(), "PEBBLE_VA_NOSLEEP=1", "PEBBLE_WFE_NONCEREJECT=0")
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
}

// commandEnv, set to 1, tells a test binary started by Command to run
// its command's main instead of the tests.
const commandEnv = "FLURRY_PEBBLETEST_COMMAND"

// Main is the TestMain of a command's tests that use Command:
//
//	func TestMain(m *testing.M) { os.Exit(pebbletest.Main(m, main)) }
//
// In a test binary started by Command it runs main instead of the tests.
func Main(m *testing.M, main func()) int {
	if os.Getenv(commandEnv) == "1" {
		main()
		return 0
	}
	return m.Run()
}

// Command starts the test binary as its command (see Main) with args,
// trusting ca's directory, until the test ends. Its output goes to the
// returned Stringer.
func (ca *CA) Command(t testing.TB, args ...string) fmt.Stringer {
	t.Helper()
	out := &syncBuffer{}
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(ca.Env(), commandEnv+"=1")
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(startTimeout):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("command output:\n%s", out)
		}
	})
	return out
}

// FreeAddr returns a loopback TCP address nothing listens on now, below
// the ephemeral ports (demo.FreeAddr): pebble and the command under test
// bind theirs only after pebble has started, and a port from the ephemeral
// range could be taken meanwhile by any connection on the machine.
func FreeAddr(t testing.TB) string { return freeAddr(t) }

// freeAddr is FreeAddr.
func freeAddr(t testing.TB) string {
	t.Helper()
	addr, err := demo.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return addr
}

func atoi(t testing.TB, s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func get(c *http.Client, url string) ([]byte, error) {
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("%s: %s", url, resp.Status)
	}
	return b, err
}

// directoryCert returns a fresh CA and, signed by it, the certificate and
// key of pebble's directory at 127.0.0.1, all PEM.
func directoryCert(t testing.TB) (caPEM, certPEM, keyPEM []byte) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pebbletest directory CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caTmpl, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
