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

// TestFastPathBytes checks that every kind of rendezvous response the
// fast path writes is the one net/http writes, byte for byte but the
// date, and that net/http never saw those requests.
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
