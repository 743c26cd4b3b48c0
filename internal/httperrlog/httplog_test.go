package httperrlog

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct{ text, want string }{
		{`tls: client requested unsupported application protocols (["evil\x1b[31m"])`, "no common ALPN protocol"},
		{"tls: first record does not look like a TLS handshake", "not TLS"},
		{"client sent an HTTP request to an HTTPS server", "not TLS"},
		{"EOF", "closed by peer"},
		{"read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer", "reset by peer"},
		{"tls: client offered only unsupported versions: [301]", "no common TLS version"},
		{"tls: no cipher suite supported by both client and server", "no common cipher suite"},
		{`acme/autocert: host "evil.example" not configured in HostWhitelist`, "no certificate for the server name"},
		{"remote error: tls: bad certificate", "certificate problem"},
		{"remote error: tls: internal error", "alert from peer"},
		{"something new", "other"},
	} {
		if got := classify(tc.text); got != tc.want {
			t.Errorf("classify(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
	if got := HandshakeFailure(os.ErrDeadlineExceeded); got != "timeout" {
		t.Errorf("HandshakeFailure(deadline) = %q", got)
	}
	if got := HandshakeFailure(errors.New("tls: oops")); got != "other" {
		t.Errorf("HandshakeFailure(other) = %q", got)
	}
}

// TestErrorLog checks, with a real TLS server, that the peer's ALPN
// protocol names and non-TLS bytes reach the log only as a reason.
func TestErrorLog(t *testing.T) {
	var out bytes.Buffer
	logged := make(chan struct{}, 8)
	h := slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		out.Write(p)
		logged <- struct{}{}
		return len(p), nil
	}), nil)
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = ErrorLog(h, slog.LevelInfo)
	srv.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	srv.StartTLS()
	defer srv.Close()
	addr := srv.Listener.Addr().String()

	const evil = "evil\x1b[31m-protocol"
	c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{evil}})
	if err == nil {
		c.Close()
		t.Fatal("handshake with an unknown ALPN protocol succeeded")
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(raw, "GET /secret-path-from-peer HTTP/1.1\r\nHost: x\r\n\r\n")
	_, _ = io.Copy(io.Discard, raw)
	raw.Close()
	for range 2 {
		select {
		case <-logged:
		case <-time.After(10 * time.Second):
			t.Fatalf("no log line; so far %q", out.String())
		}
	}
	got := out.String()
	for _, want := range []string{"no common ALPN protocol", "not TLS", "TLS handshake failed"} {
		if !strings.Contains(got, want) {
			t.Errorf("log lacks %q: %q", want, got)
		}
	}
	for _, peer := range []string{"evil", "secret-path", "\x1b"} {
		if strings.Contains(got, peer) {
			t.Errorf("log quotes the peer (%q): %q", peer, got)
		}
	}
}

func TestErrorLogOtherMessages(t *testing.T) {
	var out bytes.Buffer
	l := ErrorLog(slog.NewTextHandler(&out, nil), slog.LevelInfo)
	l.Printf("http2: server: error reading preface from client 127.0.0.1:1: bogus greeting %q", "peer\x00text")
	l.Printf("http: Accept error: accept tcp: too many open files; retrying in 5ms")
	got := out.String()
	if strings.Contains(got, "peer") || strings.Contains(got, "bogus") || !strings.Contains(got, "http2: server") {
		t.Errorf("detail of an http2 message kept or head lost: %q", got)
	}
	if !strings.Contains(got, "too many open files") || !strings.Contains(got, "level=ERROR") {
		t.Errorf("accept error not kept whole at error level: %q", got)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
