package brokerwire

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// scriptedResponse is an h1Conn whose connection replies with script.
func scriptedResponse(script []byte) *H1Conn {
	return &H1Conn{
		c:    &H1Client{},
		ctx:  context.Background(),
		conn: scriptedConn{bytes.NewReader(script)},
		br:   bufio.NewReaderSize(bytes.NewReader(script), 4096),
		stop: func() bool { return true },
	}
}

func TestH1ReadResponse(t *testing.T) {
	tests := []struct {
		name      string
		script    string
		status    int
		body      string
		keepAlive bool
		err       bool
	}{
		{"content length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\n\r\nhello", 200, "hello", true, false},
		{"header case", "HTTP/1.1 200 OK\r\ncontent-length:  2 \r\n\r\nhi", 200, "hi", true, false},
		{"chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: t\r\n\r\n", 200, "abcde", true, false},
		{"connection close", "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n", 503, "", false, false},
		{"HTTP/1.0", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 200, "x", false, false},
		{"until EOF", "HTTP/1.1 200 OK\r\n\r\nto the end", 200, "to the end", false, false},
		{"100 continue first", "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", 200, "ok", true, false},
		{"too long", "HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n", 0, "", false, true},
		{"chunked too long", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n", 0, "", false, true},
		{"bad status", "HTTP/1.1 2x0 OK\r\n\r\n", 0, "", false, true},
		{"not HTTP", "SSH-2.0-OpenSSH\r\n\r\n", 0, "", false, true},
		{"bad length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", 0, "", false, true},
		{"header without colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", 0, "", false, true},
		{"short body", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, "", false, true},
		{"empty", "", 0, "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := scriptedResponse([]byte(tt.script))
			status, body, err := h.readResponse(32)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if status != tt.status || string(body) != tt.body {
				t.Errorf("got %d %q, want %d %q", status, body, tt.status, tt.body)
			}
			if open := h.conn != nil; open != tt.keepAlive {
				t.Errorf("connection open = %v, want %v", open, tt.keepAlive)
			}
		})
	}
}

// FuzzH1Response feeds arbitrary bytes to the response reader: it must
// return, never panic, and never return more than the limit.
func FuzzH1Response(f *testing.F) {
	f.Add([]byte("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"))
	f.Add([]byte("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n"))
	f.Add([]byte("HTTP/1.0 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\nbody until EOF"))
	f.Fuzz(func(t *testing.T, script []byte) {
		h := scriptedResponse(script)
		if _, body, err := h.readResponse(64); err == nil && len(body) > 64 {
			t.Fatalf("body of %d bytes over the limit", len(body))
		}
	})
}

// TestH1Client runs requests against a net/http server: keep-alive reuse,
// a server that closes idle connections (the request is sent again once),
// a context that ends during a request, and the written callback.
func TestH1Client(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch r.URL.Path {
		case "/hold":
			<-r.Context().Done()
		case "/drop":
			// Answer, then close the connection without saying so, as a
			// server whose idle timeout fires does.
			conn, bw, err := w.(http.Hijacker).Hijack()
			if err != nil {
				return
			}
			bw.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\ndrop") //nolint:errcheck // test server
			bw.Flush()                                                         //nolint:errcheck
			conn.Close()
		case "/chunked":
			w.Write(body) //nolint:errcheck // test server
			w.(http.Flusher).Flush()
			w.Write(body) //nolint:errcheck
		default:
			fmt.Fprintf(w, "%s %s %s", r.Method, r.Host, body)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	c := NewH1Client(u, 10*time.Second, false, false)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	h := c.Conn(ctx)
	defer h.Close()

	written := 0
	for i := range 3 {
		status, body, err := h.Post("/x", fmt.Appendf(nil, "n%d", i), 100, func() { written++ })
		if err != nil || status != 200 || string(body) != fmt.Sprintf("POST %s n%d", u.Host, i) {
			t.Fatalf("request %d: %d %q %v", i, status, body, err)
		}
	}
	if status, body, err := h.Post("/chunked", []byte("ab"), 100, nil); err != nil || status != 200 || string(body) != "abab" {
		t.Fatalf("chunked: %d %q %v", status, body, err)
	}
	if written != 3 {
		t.Errorf("written called %d times, want 3", written)
	}
	// The server closes the connection after a response: the next request
	// finds it dead and is sent again on a new one.
	if status, body, err := h.Post("/drop", nil, 100, nil); err != nil || status != 200 || string(body) != "drop" {
		t.Fatalf("drop: %d %q %v", status, body, err)
	}
	if status, body, err := h.Post("/x", []byte("again"), 100, nil); err != nil || status != 200 || !strings.HasSuffix(string(body), "again") {
		t.Fatalf("after the server closed the connection: %d %q %v", status, body, err)
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d connections, want 2", n)
	}
	// Ending ctx ends a request in flight.
	done := make(chan error, 1)
	go func() {
		_, _, err := h.Post("/hold", nil, 100, cancel)
		done <- err
	}()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("held request ended with %v, want context.Canceled", err)
	}
	if _, _, err := h.Post("/x", nil, 100, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("request after cancel: %v", err)
	}
}

// scriptedConn is a net.Conn whose reads come from a fixed script and whose
// writes are discarded: a server that says whatever the test wants.
type scriptedConn struct{ r *bytes.Reader }

func (c scriptedConn) Read(p []byte) (int, error)       { return c.r.Read(p) }
func (c scriptedConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c scriptedConn) Close() error                     { return nil }
func (c scriptedConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c scriptedConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c scriptedConn) SetDeadline(time.Time) error      { return nil }
func (c scriptedConn) SetReadDeadline(time.Time) error  { return nil }
func (c scriptedConn) SetWriteDeadline(time.Time) error { return nil }
