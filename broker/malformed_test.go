package broker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMalformedRequestsAsNetHTTP sends, as raw bytes, requests that
// smuggling and desynchronisation attacks are made of to a broker served
// as flurry-broker serves it (Serve: net/http, polls parked off it), on a
// new connection and on one whose proxy poll was parked and answered
// first; and to a bare net/http server with the same limits. The broker
// must answer each with net/http's status: those net/http refuses
// (differing Content-Lengths, NUL bytes, an over-long head, an
// unsupported transfer coding) are refused alike, and those it accepts
// (with Go 1.27: identical Content-Lengths, Content-Length beside a
// chunked Transfer-Encoding, whose body is then read chunked, an
// obs-fold line, bare LF line ends) are served alike.
func TestMalformedRequestsAsNetHTTP(t *testing.T) {
	answer, err := os.ReadFile(filepath.Join("testdata", "proxy-answer-request.json"))
	if err != nil {
		t.Fatal(err)
	}
	head := "POST /answer HTTP/1.1\r\nHost: broker\r\n"
	cl := fmt.Sprintf("Content-Length: %d\r\n", len(answer))
	body := string(answer)
	chunked := fmt.Sprintf("%x\r\n%s\r\n0\r\n\r\n", len(answer), answer)
	cases := []struct {
		name, req string
		refused   int // net/http's status, if it refuses the request
	}{
		{"well-formed", head + cl + "\r\n" + body, 0},
		{"two Content-Lengths", head + cl + "Content-Length: 1\r\n\r\n" + body, http.StatusBadRequest},
		{"two equal Content-Lengths", head + cl + cl + "\r\n" + body, 0},
		{"Content-Length list", head + fmt.Sprintf("Content-Length: %d, 1\r\n\r\n", len(answer)) + body, http.StatusBadRequest},
		{"Content-Length sign", head + fmt.Sprintf("Content-Length: +%d\r\n\r\n", len(answer)) + body, http.StatusBadRequest},
		{"Content-Length with Transfer-Encoding", head + "Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked, 0},
		{"Transfer-Encoding with Content-Length", head + "Transfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n" + chunked, 0},
		{"unsupported Transfer-Encoding", head + "Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", http.StatusNotImplemented},
		{"obs-fold", head + "X-Folded: a\r\n b\r\n" + cl + "\r\n" + body, 0},
		{"obs-fold Content-Length", head + "Content-Length:\r\n " + fmt.Sprint(len(answer)) + "\r\n\r\n" + body, 0},
		{"space before colon", head + "Content-Length : 2\r\n\r\n" + body, http.StatusBadRequest},
		{"bare LF", strings.ReplaceAll(head+cl+"\r\n", "\r\n", "\n") + body, 0},
		{"bare CR", head + "X-A: a\rb\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
		{"NUL in a value", head + "X-A: a\x00b\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
		{"NUL in a name", head + "X-\x00A: a\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
		{"NUL in the target", "POST /ans\x00wer HTTP/1.1\r\nHost: broker\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
		{"over-long head", head + "X-Long: " + strings.Repeat("a", 2*maxHeaderBytes) + "\r\n" + cl + "\r\n" + body, http.StatusRequestHeaderFieldsTooLarge},
		{"over-long request line", "POST /" + strings.Repeat("a", 2*maxHeaderBytes) + " HTTP/1.1\r\nHost: broker\r\n\r\n", http.StatusRequestHeaderFieldsTooLarge},
		{"two Hosts", head + "Host: other\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
		{"no Host", "POST /answer HTTP/1.1\r\n" + cl + "\r\n" + body, http.StatusBadRequest},
	}

	bare := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	bln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = bare.Serve(bln) }()
	t.Cleanup(func() { bare.Close() })

	b, err := New(Config{ProxyHold: 100 * time.Millisecond, DisableRateLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	b.parkAfter = 0 // park every poll at once
	addr := serveLoopback(t, b)
	waitParked := func() {
		deadline := time.Now().Add(10 * time.Second)
		for b.Parked() == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the poll was not parked")
			}
			time.Sleep(time.Millisecond)
		}
	}
	pollBody := `{"Sid":"malformed","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":0,"AcceptedRelayPattern":""}`
	poll := fmt.Sprintf("POST /proxy HTTP/1.1\r\nHost: broker\r\nContent-Length: %d\r\n\r\n%s", len(pollBody), pollBody)

	for _, c := range cases {
		want := rawStatus(t, bln.Addr().String(), "", nil, c.req)
		if c.refused != 0 && want != c.refused {
			t.Errorf("%s: net/http answers %d, the test expects it to refuse with %d", c.name, want, c.refused)
		}
		if c.refused == 0 && want != http.StatusOK {
			t.Errorf("%s: net/http answers %d, the test expects it to serve the request", c.name, want)
		}
		if got := rawStatus(t, addr, "", nil, c.req); got != want {
			t.Errorf("%s: broker answers %d, net/http %d", c.name, got, want)
		}
		if got := rawStatus(t, addr, poll, waitParked, c.req); got != want {
			t.Errorf("%s, after a parked poll: broker answers %d, net/http %d", c.name, got, want)
		}
	}
}

// rawStatus sends first (if not empty), calls sent (if not nil) and reads
// first's response, then sends req, on a new connection to addr, and
// returns the status of req's response (0 if the connection closed
// without one).
func rawStatus(t *testing.T, addr, first string, sent func(), req string) int {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	if first != "" {
		if _, err := io.WriteString(c, first); err != nil {
			t.Fatal(err)
		}
		if sent != nil {
			sent()
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("first request: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Close {
			t.Fatalf("first request: %d, close %v", resp.StatusCode, resp.Close)
		}
	}
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}
