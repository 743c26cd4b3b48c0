package broker_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// FuzzParkedConnection is the differential fuzz target of parking (park.go,
// listener.go), the part of the broker's HTTP/1.1 serving that is its own:
// a proxy poll's connection taken from net/http, its response written by
// hand, the bytes that arrive meanwhile kept and replayed, the connection
// handed back to net/http for its next request. A proxy sends a poll and
// then arbitrary bytes, pipelined behind the poll or after its response;
// what it receives (every response, and whether the connection closes)
// must be what it receives from the same broker on plain net/http, where
// the poll waits in its handler, but for the Date fields.
func FuzzParkedConnection(f *testing.F) {
	answer, err := os.ReadFile("testdata/proxy-answer-request.json")
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		nil,
		[]byte("\r\n"),
		rawRequest("POST", "/answer", answer),
		append(rawRequest("POST", "/answer", answer), rawRequest("POST", "/answer", []byte("{"))...),
		rawRequest("POST", "/proxy", []byte(parkPoll)),
		rawRequest("POST", "/client", []byte("1.0\n{}")),
		rawRequest("GET", "/robots.txt", nil),
		[]byte("GET / HTTP/1.1\r\nHost: b\r\nConnection: close\r\n\r\n"),
		[]byte("POST /answer HTTP/1.1\nHost: b\nContent-Length: 2\n\n{}"),
		[]byte("POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}"),
		[]byte("POST /answer HTTP/1.1\r\nHost: b\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n"),
		[]byte("POST /answer HTTP/1.1\r\nHost: b\r\nX-A: a\r\n b\r\nContent-Length: 0\r\n\r\n"),
		[]byte("POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 5\r\n\r\n{"),
		[]byte("POST /ans"),
		[]byte("\x00\x01garbage\r\n\r\n"),
	} {
		f.Add(seed, true)
		f.Add(seed, false)
	}
	cfg := broker.Config{
		BridgeListPath:    "testdata/bridges-snowflake.ndjson",
		ProxyHold:         20 * time.Millisecond,
		ClientTimeout:     20 * time.Millisecond,
		DisableRateLimits: true,
	}
	// Only the rendezvous endpoints, whose answers depend on nothing but
	// the request: the operator pages show the broker's own history.
	rendezvousOnly := func(srv *http.Server) {
		h := srv.Handler
		srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/proxy", "/client", "/answer":
				h.ServeHTTP(w, r)
			default:
				http.NotFound(w, r)
			}
		})
	}
	parked := startTestBroker(f, cfg, parkingListener, rendezvousOnly)
	plain := startTestBroker(f, cfg, plainListener, rendezvousOnly)
	f.Fuzz(func(t *testing.T, data []byte, pipelined bool) {
		if len(data) > 1<<10 {
			return // the parked poll keeps at most 4 KiB it was sent (maxReplay)
		}
		want := pollThenSend(t, plain, data, pipelined)
		if got := pollThenSend(t, parked, data, pipelined); !bytes.Equal(got, want) {
			t.Fatalf("sent %q (pipelined %v): parked, the proxy receives\n%q\non net/http alone\n%q", data, pipelined, got, want)
		}
	})
}

// parkPoll is a proxy poll body.
const parkPoll = `{"Sid":"fuzz","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":0,"AcceptedRelayPattern":""}`

// quiet is how long pollThenSend waits for more once nothing arrives: far
// longer than a loopback broker takes to answer what it has read.
const quiet = 150 * time.Millisecond

// pollThenSend sends a proxy poll on a new connection to tb, and data
// behind it (pipelined) or after its response, and returns all it
// receives until the broker closes the connection or nothing more
// arrives, the dates blanked, and "closed" if the broker closed it.
func pollThenSend(t *testing.T, tb *testBroker, data []byte, pipelined bool) []byte {
	t.Helper()
	c, err := net.Dial("tcp", tb.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	poll := rawRequest("POST", "/proxy", []byte(parkPoll))
	if pipelined {
		poll = append(poll, data...)
	}
	if _, err := c.Write(poll); err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	if !pipelined {
		// The poll's response, read byte by byte so that nothing after it
		// is taken before data is sent.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReaderSize(io.TeeReader(oneByte{c}, &got), 16), nil)
		if err != nil {
			t.Fatalf("poll response: %v (%q)", err, got.Bytes())
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if _, err := c.Write(data); err != nil && len(data) > 0 {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	for {
		_ = c.SetReadDeadline(time.Now().Add(quiet))
		n, err := c.Read(buf)
		got.Write(buf[:n])
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			got.WriteString("closed")
			break
		}
	}
	return dateLine.ReplaceAll(got.Bytes(), []byte("Date: X\r"))
}

// oneByte reads at most one byte at a time.
type oneByte struct{ r io.Reader }

func (o oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}
