package tlsbuf

import (
	"bytes"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"unsafe"

	"github.com/flurrypt/flurry/internal/chaintest/loopback"
)

// tlsPair returns the two ends of a TLS connection over loopback TCP, the
// handshake done.
func tlsPair(t *testing.T) (server, client *tls.Conn) {
	t.Helper()
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	cert := ts.TLS.Certificates[0] // httptest's own certificate
	ts.Close()
	s, c := loopback.TCPPair(t)
	server = tls.Server(s, &tls.Config{Certificates: []tls.Certificate{cert}})
	client = tls.Client(c, &tls.Config{InsecureSkipVerify: true}) // #nosec G402 -- the test's own server
	t.Cleanup(func() {
		server.Close()
		client.Close()
	})
	errc := make(chan error, 1)
	go func() { errc <- client.Handshake() }()
	if err := server.Handshake(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return server, client
}

func capacities(c *tls.Conn) (rawInput, hand int) {
	p := unsafe.Pointer(c)
	return (*bytes.Buffer)(unsafe.Add(p, conn.rawInput)).Cap(), (*bytes.Buffer)(unsafe.Add(p, conn.hand)).Cap()
}

func readN(t *testing.T, c *tls.Conn, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(c, b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReleaseDropsEmptyBuffers: after the handshake and a read, both
// buffers hold capacity; Release drops it, and the connection carries on
// (the small buffer a small record needs is kept).
func TestReleaseDropsEmptyBuffers(t *testing.T) {
	server, client := tlsPair(t)
	go client.Write([]byte("first"))
	if got := readN(t, server, 5); string(got) != "first" {
		t.Fatalf("read %q", got)
	}
	if raw, hand := capacities(server); raw <= keepRawInput || hand == 0 {
		t.Fatalf("before Release: rawInput %d, hand %d bytes; want both grown by the handshake (has crypto/tls changed?)", raw, hand)
	}
	if !Release(server) {
		t.Fatal("Release: crypto/tls is not laid out as expected")
	}
	if raw, hand := capacities(server); raw != 0 || hand != 0 {
		t.Errorf("after Release: rawInput %d, hand %d bytes; want 0", raw, hand)
	}
	go client.Write([]byte("second"))
	if got := readN(t, server, 6); string(got) != "second" {
		t.Fatalf("after Release, read %q", got)
	}
	// A small record's buffer is kept.
	Release(server)
	if raw, _ := capacities(server); raw == 0 || raw > keepRawInput {
		t.Errorf("after a small record and Release: rawInput %d bytes; want kept, at most %d", raw, keepRawInput)
	}
}

// TestReleaseKeepsUnreadData: plaintext not yet read, and records read
// ahead, survive a Release.
func TestReleaseKeepsUnreadData(t *testing.T) {
	server, client := tlsPair(t)
	msg := bytes.Repeat([]byte("0123456789"), 100)
	go func() {
		client.Write(msg)
		client.Write(msg) // a second record, likely read ahead with the first
	}()
	var got []byte
	for len(got) < 2*len(msg) {
		got = append(got, readN(t, server, min(7, 2*len(msg)-len(got)))...)
		Release(server)
	}
	if !bytes.Equal(got, append(append([]byte(nil), msg...), msg...)) {
		t.Fatal("data changed across Release")
	}
}
