package certtest

import (
	"crypto/tls"
	"io"
	"net"
	"testing"
)

// TestServe: a TLS server with the certificate is trusted, through Pool,
// for each of its hosts, and the PEM files load as a key pair.
func TestServe(t *testing.T) {
	c := New(t, "relay.flurry.test", "127.0.0.1")
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{c.TLS}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(conn, "hi")
			conn.Close()
		}
	}()
	for _, name := range []string{"relay.flurry.test", "127.0.0.1"} {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: c.Pool, ServerName: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		b, _ := io.ReadAll(conn)
		conn.Close()
		if string(b) != "hi" {
			t.Errorf("%s: read %q", name, b)
		}
	}
	if _, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: c.Pool, ServerName: "other.flurry.test"}); err == nil {
		t.Error("trusted for a host it does not name")
	}
	certFile, keyFile := c.Files(t)
	if _, err := tls.LoadX509KeyPair(certFile, keyFile); err != nil {
		t.Error(err)
	}
	if c.Leaf.Subject.CommonName != "relay.flurry.test" || !c.Leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("leaf %+v", c.Leaf)
	}
}
