package broker

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestParkedResponseBytes checks that a parked poll's response is what
// net/http writes for the same headers and body, byte for byte but the
// date, with and without "Connection: close".
func TestParkedResponseBytes(t *testing.T) {
	body := []byte(`{"Status":"no match"}`)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Access-Control-Allow-Headers", corsHeaders)
		h.Set("Access-Control-Allow-Origin", corsOrigin)
		h["Content-Type"] = []string{textPlain}
		_, _ = w.Write(body)
	}))
	defer srv.Close()
	date := regexp.MustCompile(`Date: [^\r]*\r`)
	for _, closeConn := range []bool{false, true} {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		req := "POST /proxy HTTP/1.1\r\nHost: broker\r\nContent-Length: 0\r\n"
		if closeConn {
			req += "Connection: close\r\n" // net/http then ends its response with the field
		}
		if _, err := io.WriteString(c, req+"\r\n"); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		var raw bytes.Buffer
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatal(err)
			}
			raw.WriteString(line)
			if line == "\r\n" {
				break
			}
		}
		if _, err := io.CopyN(&raw, br, int64(len(body))); err != nil {
			t.Fatal(err)
		}
		c.Close()
		want := date.ReplaceAll(raw.Bytes(), []byte("Date: X\r"))
		got := date.ReplaceAll(appendParkedResponse(nil, body, closeConn, time.Now()), []byte("Date: X\r"))
		if !bytes.Equal(got, want) {
			t.Errorf("closeConn %v: parked response\n%q\nnet/http\n%q", closeConn, got, want)
		}
		if closeConn && !strings.Contains(string(want), "Connection: close") {
			t.Errorf("net/http did not close: %q", want)
		}
	}
}
