package broker_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

// Tests of the fast path (fastpath.go): rendezvous requests served
// without net/http, byte for byte as net/http serves them.

// readResponse reads one response from br and returns its bytes as sent,
// whatever its framing (Content-Length or chunked), the date replaced.
func readResponse(t testing.TB, br *bufio.Reader) []byte {
	t.Helper()
	var raw []byte
	line := func() string {
		l, err := br.ReadString('\n')
		raw = append(raw, l...)
		if err != nil {
			t.Fatalf("reading response: %v (so far %q)", err, raw)
		}
		return l
	}
	body := func(n int) {
		b := make([]byte, n)
		if _, err := io.ReadFull(br, b); err != nil {
			t.Fatalf("reading response body: %v (so far %q)", err, raw)
		}
		raw = append(raw, b...)
	}
	length, chunked := 0, false
	for l := line(); l != "\r\n"; l = line() {
		if v, ok := strings.CutPrefix(l, "Content-Length: "); ok {
			fmt.Sscanf(v, "%d", &length)
		}
		chunked = chunked || l == "Transfer-Encoding: chunked\r\n"
	}
	if !chunked {
		body(length)
		return dateLine.ReplaceAll(raw, []byte("Date: X\r"))
	}
	for {
		var n int
		if _, err := fmt.Sscanf(line(), "%x", &n); err != nil {
			t.Fatalf("chunk size: %v (so far %q)", err, raw)
		}
		body(n + 2)
		if n == 0 {
			return dateLine.ReplaceAll(raw, []byte("Date: X\r"))
		}
	}
}

// exchange sends each request on one connection to tb, waiting for each
// response, and returns the responses.
func exchange(t testing.TB, tb *testBroker, reqs ...[]byte) [][]byte {
	t.Helper()
	c := tb.dial(t)
	br := bufio.NewReader(c)
	var out [][]byte
	for _, r := range reqs {
		write(t, c, r)
		out = append(out, readResponse(t, br))
	}
	return out
}

// exchangeKept sends req on a new connection to tb and returns the
// response; unless it closes the connection (a refusal), req is sent
// again as a keep-alive request and the second response returned.
func exchangeKept(t testing.TB, tb *testBroker, req []byte) []byte {
	t.Helper()
	c := tb.dial(t)
	br := bufio.NewReader(c)
	write(t, c, req)
	resp := readResponse(t, br)
	if bytes.Contains(resp, []byte("\r\nConnection: close\r\n")) {
		return resp
	}
	write(t, c, req)
	return readResponse(t, br)
}

// newCountingFastBroker is newFastTestBroker, with its server set up by
// configure (if not nil), and a count of the connections net/http accepted.
func newCountingFastBroker(t testing.TB, cfg broker.Config, configure func(*http.Server)) (*testBroker, *atomic.Int64) {
	var n atomic.Int64
	tb := startTestBroker(t, cfg, fastListener, func(srv *http.Server) {
		srv.ConnState = func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				n.Add(1)
			}
		}
		if configure != nil {
			configure(srv)
		}
	}, func(*broker.Broker) {})
	return tb, &n
}

func withHeader(req []byte, field string) []byte {
	head, body, _ := bytes.Cut(req, []byte("\r\n\r\n"))
	return fmt.Appendf(nil, "%s\r\n%s\r\n\r\n%s", head, field, body)
}

// withBareLF ends with a bare LF instead of CRLF the lines of req's head
// for which bare(i, blank) is true: i counts from 0, blank is the blank
// line that ends the head.
func withBareLF(req []byte, bare func(i int, blank bool) bool) []byte {
	head, body, _ := bytes.Cut(req, []byte("\r\n\r\n"))
	lines := append(bytes.Split(head, []byte("\r\n")), nil)
	var out []byte
	for i, l := range lines {
		out = append(out, l...)
		if bare(i, i == len(lines)-1) {
			out = append(out, '\n')
		} else {
			out = append(out, "\r\n"...)
		}
	}
	return append(out, body...)
}

// TestFastPathBytes checks that every kind of rendezvous response the
// fast path writes is the one net/http writes, byte for byte but the
// date, and that net/http never saw those requests; and that requests
// whose lines end in a bare LF, which the fast path hands over, are
// answered as net/http answers them.
func TestFastPathBytes(t *testing.T) {
	bridges := snowflakeBridges(t)
	longAnswer := sd(t, "answer", strings.Repeat("x", 3000)) // a response past net/http's 2 KiB buffer: chunked
	legacy := []byte(sd(t, "offer", "legacy"))
	requests := map[string][]byte{
		"proxy malformed":         rawRequest("POST", "/proxy", []byte("{")),
		"proxy incorrect pattern": rawRequest("POST", "/proxy", proxyPoll(t, "pattern", messages.NATUnrestricted, 0, nil)),
		"proxy empty body":        rawRequest("POST", "/proxy", nil),
		"answer client gone":      rawRequest("POST", "/answer", vector(t, "proxy-answer-request.json")),
		"answer long, gone":       rawRequest("POST", "/answer", proxyAnswer(t, "nobody", longAnswer)),
		"answer malformed":        rawRequest("POST", "/answer", []byte("[]")),
		"client no proxies":       rawRequest("POST", "/client", vector(t, "client-poll-request-1.0.txt")),
		"client malformed":        rawRequest("POST", "/client", []byte("1.0\n{")),
		"client legacy":           withHeader(rawRequest("POST", "/client", legacy), "Snowflake-NAT-Type: restricted"),
		"client legacy bad":       rawRequest("POST", "/client", []byte("nonsense")),
		"forwarded":               withHeader(rawRequest("POST", "/answer", []byte("{}")), "X-Forwarded-For: 192.0.2.1\r\nForwarded: for=192.0.2.2"),
		"usual fields":            withHeader(rawRequest("POST", "/answer", []byte("{}")), "User-Agent: Go-http-client/1.1\r\nAccept-Encoding: gzip\r\nConnection: keep-alive"),
		// net/http drops a CRLF after a POST's body (sent again below).
		"CRLF after the body": append(rawRequest("POST", "/answer", vector(t, "proxy-answer-request.json")), "\r\n"...),
	}
	all := func(int, bool) bool { return true }
	answer := rawRequest("POST", "/answer", []byte("{}"))
	handedOver := map[string][]byte{
		"LF":                          withBareLF(rawRequest("POST", "/answer", vector(t, "proxy-answer-request.json")), all),
		"LF, no body":                 withBareLF(rawRequest("POST", "/proxy", nil), all),
		"LF, client":                  withBareLF(rawRequest("POST", "/client", vector(t, "client-poll-request-1.0.txt")), all),
		"LF, refused":                 withBareLF(rawRequest("POST", "/answer", []byte("[]")), all),
		"LF, page":                    withBareLF([]byte("GET /robots.txt HTTP/1.1\r\nHost: broker\r\n\r\n"), all),
		"LF in the first line":        withBareLF(answer, func(i int, _ bool) bool { return i == 0 }),
		"LF in a field line":          withBareLF(answer, func(i int, _ bool) bool { return i == 1 }),
		"LF blank line":               withBareLF(answer, func(_ int, blank bool) bool { return blank }),
		"LF, CRLF blank line":         withBareLF(rawRequest("POST", "/client", vector(t, "client-poll-request-1.0.txt")), func(_ int, blank bool) bool { return !blank }),
		"LF blank, CRLFs in the body": withBareLF(rawRequest("POST", "/answer", []byte("{\r\n\r\n}")), func(_ int, blank bool) bool { return blank }),
	}
	got := map[string]map[string][]byte{}
	for _, mode := range []string{"fast", "plain"} {
		cfg := broker.Config{BridgeListPath: bridges, ProxyHold: time.Second}
		var tb *testBroker
		httpConns := new(atomic.Int64)
		if mode == "fast" {
			tb, httpConns = newCountingFastBroker(t, cfg, nil)
		} else {
			tb = newPlainTestBroker(t, cfg)
		}
		got[mode] = map[string][]byte{}
		for name, req := range requests {
			got[mode][name] = exchangeKept(t, tb, req)
		}
		// A match whose answer makes the client's response chunked.
		poll := async(func() response {
			return tb.post(t, "/proxy", proxyPoll(t, "long", messages.NATUnrestricted, 0, ptr("")))
		})
		tb.rec.waitStarted(t, 1)
		client := make(chan []byte, 1)
		go func() {
			client <- exchange(t, tb, rawRequest("POST", "/client", clientPoll(t, sd(t, "offer", "c"), messages.NATUnrestricted, "")))[0]
		}()
		<-poll
		got[mode]["answer success"] = exchange(t, tb, rawRequest("POST", "/answer", proxyAnswer(t, "long", longAnswer)))[0]
		got[mode]["client matched, chunked"] = <-client
		if httpConns.Load() != 0 {
			t.Errorf("net/http accepted %d connections, want none", httpConns.Load())
		}
		for name, req := range handedOver {
			got[mode][name] = exchangeKept(t, tb, req)
		}
		if n := httpConns.Load(); mode == "fast" && n != int64(len(handedOver)) {
			t.Errorf("net/http accepted %d connections, want %d (the bare LF requests)", n, len(handedOver))
		}
	}
	for name, want := range got["plain"] {
		if g := got["fast"][name]; !bytes.Equal(g, want) {
			t.Errorf("%s: fast path wrote\n%q\nnet/http\n%q", name, g, want)
		}
	}
	if !bytes.Contains(got["fast"]["client matched, chunked"], []byte("Transfer-Encoding: chunked")) {
		t.Errorf("long client response not chunked: %q", got["fast"]["client matched, chunked"])
	}
}

// TestFastPathHandsOver checks that requests the fast path does not take
// reach net/http on the same connection, with what was read of them, and
// that pipelined rendezvous requests are answered in order.
func TestFastPathHandsOver(t *testing.T) {
	tb, httpConns := newCountingFastBroker(t, broker.Config{}, nil)
	gone := string(vector(t, "proxy-answer-response-client-gone.json"))
	answer := rawRequest("POST", "/answer", vector(t, "proxy-answer-request.json"))
	robots := []byte("GET /robots.txt HTTP/1.1\r\nHost: broker\r\n\r\n")
	unknown := withHeader(answer, "X-Unknown: 1")

	c := tb.dial(t)
	br := bufio.NewReader(c)
	write(t, c, bytes.Join([][]byte{answer, answer}, nil)) // pipelined
	for range 2 {
		if got := readResponse(t, br); !bytes.HasSuffix(got, []byte(gone)) {
			t.Fatalf("response %q, want body %q", got, gone)
		}
	}
	if n := httpConns.Load(); n != 0 {
		t.Fatalf("net/http accepted %d connections for rendezvous requests", n)
	}
	// Sent in two pieces: the fast path must hand over both.
	write(t, c, unknown[:10])
	time.Sleep(10 * time.Millisecond)
	write(t, c, unknown[10:])
	if got := readResponse(t, br); !bytes.HasSuffix(got, []byte(gone)) {
		t.Fatalf("response %q, want body %q", got, gone)
	}
	write(t, c, robots)
	if got := readResponse(t, br); !bytes.HasSuffix(got, []byte("Disallow: /\n")) {
		t.Fatalf("response %q, want robots.txt", got)
	}
	if n := httpConns.Load(); n != 1 {
		t.Fatalf("net/http accepted %d connections, want 1", n)
	}
}

// TestFastPathLimits checks the fast path's limits: a request whose head
// never ends is cut at the header timeout, an idle connection at the idle
// timeout, and an oversized body is refused by net/http as before.
func TestFastPathLimits(t *testing.T) {
	tb, _ := newCountingFastBroker(t, broker.Config{}, func(srv *http.Server) {
		srv.ReadHeaderTimeout = 50 * time.Millisecond
		srv.IdleTimeout = 50 * time.Millisecond
	})

	c := tb.dial(t)
	write(t, c, []byte("POST /answer HTTP/1.1\r\nHost: broker\r\n"))
	expectEOF(t, bufio.NewReader(c))

	c = tb.dial(t)
	br := bufio.NewReader(c)
	write(t, c, rawRequest("POST", "/answer", []byte("{}")))
	readResponse(t, br)
	expectEOF(t, br)

	c = tb.dial(t)
	br = bufio.NewReader(c)
	write(t, c, rawRequest("POST", "/client", make([]byte, messages.MaxBodySize+1)))
	if got := readResponse(t, br); !bytes.HasPrefix(got, []byte("HTTP/1.1 413 ")) {
		t.Fatalf("oversized body: %q", got)
	}
}

// TestFastPathClientGone checks that the fast path notices a client that
// leaves while its offer waits, as net/http does: the client's poll ends
// at once (a timeout, without a strike), not at its ClientTimeout, and its
// proxy's answer is told "client gone".
func TestFastPathClientGone(t *testing.T) {
	cfg := broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: 10 * time.Second, ClientTimeout: time.Minute}
	tb, _ := newCountingFastBroker(t, cfg, nil)
	poll := async(func() response {
		return tb.post(t, "/proxy", proxyPoll(t, "left", messages.NATUnrestricted, 0, ptr("")))
	})
	tb.rec.waitStarted(t, 1)
	c := tb.dial(t)
	write(t, c, rawRequest("POST", "/client", clientPoll(t, sd(t, "offer", "c"), messages.NATUnrestricted, "")))
	if r := <-poll; r.status != http.StatusOK {
		t.Fatalf("proxy poll: %d %q", r.status, r.body)
	}
	c.Close()
	select { // long before the client's minute
	case o := <-tb.rec.clientEnded:
		if o != event.ClientTimeout {
			t.Fatalf("client outcome = %v, want timeout", o)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the client's leaving went unnoticed")
	}
	got := exchange(t, tb, rawRequest("POST", "/answer", proxyAnswer(t, "left", sd(t, "answer", "a"))))[0]
	if gone := vector(t, "proxy-answer-response-client-gone.json"); !bytes.HasSuffix(got, gone) {
		t.Fatalf("answer response %q, want body %q", got, gone)
	}
}

// TestFastPathTimeoutsFromFirstByte checks that a request's header
// timeout and ReadTimeout count from its start, as net/http counts them,
// whether the fast path reads all of it or hands it to net/http midway:
// a client sends the first bytes of a request, the rest of its head (or
// its head and part of its body) three quarters of the timeout later,
// then stalls. Its connection must close after half the timeout and
// before one and a half: restarted at the handover, or counted from the
// head's end, the timeout would end at one and three quarters.
func TestFastPathTimeoutsFromFirstByte(t *testing.T) {
	const timeout = 2 * time.Second
	cases := []struct {
		name        string
		first, rest string
		headerOnly  bool // ReadHeaderTimeout; else ReadTimeout
		toHTTP      bool // the fast path hands the request over
	}{
		{"head, method", "P", "UT /answer HTTP/1.1\r\nHost: broker\r\n", true, true},
		{"head, unknown field", "POST /answer HTTP/1.1\r\n", "Host: broker\r\nX-Unknown: 1\r\n", true, true},
		{"head, bare LF", "POST /answer HTTP/1.1\r\n", "Host: broker\n", true, true},
		{"head, fast path", "POST /answer HTTP/1.1\r\n", "Host: broker\r\n", true, false},
		{"body, fast path", "POST /answer HTTP/1.1\r\n", "Host: broker\r\nContent-Length: 10\r\n\r\n{", false, false},
		{"body, unknown field", "POST /answer HTTP/1.1\r\n", "Host: broker\r\nX-Unknown: 1\r\nContent-Length: 10\r\n\r\n{", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb, httpConns := newCountingFastBroker(t, broker.Config{}, func(srv *http.Server) {
				if tc.headerOnly {
					srv.ReadHeaderTimeout = timeout
				} else {
					srv.ReadTimeout = timeout
				}
			})
			c := tb.dial(t)
			start := time.Now()
			write(t, c, []byte(tc.first))
			time.Sleep(timeout * 3 / 4) // a slow client, not a synchronisation
			write(t, c, []byte(tc.rest))
			_, _ = io.Copy(io.Discard, c) // until the broker closes
			if d := time.Since(start); d < timeout/2 || d >= timeout*3/2 {
				t.Errorf("connection closed after %v, want within the %v timeout from the first byte", d, timeout)
			}
			if n := httpConns.Load(); (n == 1) != tc.toHTTP {
				t.Errorf("net/http accepted %d connections, want handed over: %v", n, tc.toHTTP)
			}
		})
	}
}
