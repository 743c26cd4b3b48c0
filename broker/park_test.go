package broker_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

// Tests of parked polls (Broker.Listener): polls that wait off net/http.

// rawRequest is an HTTP/1.1 request as a proxy sends it.
func rawRequest(method, path string, body []byte) []byte {
	return fmt.Appendf(nil, "%s %s HTTP/1.1\r\nHost: broker\r\nContent-Length: %d\r\n\r\n%s", method, path, len(body), body)
}

// dial opens a raw connection to tb.
func (tb *testBroker) dial(t testing.TB) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", tb.srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// A broken expectation must fail the test, not hang it.
	if err := c.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// waitParked waits until the broker holds n parked polls: a poll is
// reported started before its handler parks it, and a client matched in
// between is answered by the handler instead (a legitimate path, but not
// the one these tests are about).
func (tb *testBroker) waitParked(t testing.TB, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for tb.Parked() < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d polls parked, want %d", tb.Parked(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func write(t testing.TB, c net.Conn, b []byte) {
	t.Helper()
	if _, err := c.Write(b); err != nil {
		t.Fatal(err)
	}
}

// readRaw reads one response with a Content-Length body and returns its
// bytes as sent.
func readRaw(t testing.TB, br *bufio.Reader) []byte {
	t.Helper()
	var msg []byte
	n := -1
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading response head: %v (so far %q)", err, msg)
		}
		msg = append(msg, line...)
		if v, ok := strings.CutPrefix(line, "Content-Length: "); ok {
			if _, err := fmt.Sscanf(v, "%d", &n); err != nil {
				t.Fatal(err)
			}
		}
		if line == "\r\n" {
			break
		}
	}
	if n < 0 {
		t.Fatalf("no Content-Length in %q", msg)
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	return append(msg, body...)
}

// expectEOF checks that the broker closes c (after anything already read).
func expectEOF(t testing.TB, br *bufio.Reader) {
	t.Helper()
	if b, err := br.ReadByte(); err == nil {
		rest, _ := br.Peek(br.Buffered())
		t.Fatalf("connection still open: read %q", append([]byte{b}, rest...))
	}
}

var dateLine = regexp.MustCompile(`(?m)^Date: [^\r]*\r$`)

// TestParkedResponseBytes checks that a parked poll's response is the one
// net/http writes, byte for byte but the date.
func TestParkedResponseBytes(t *testing.T) {
	got := map[string][]byte{}
	for _, mode := range serveModes {
		tb := mode.start(t, broker.Config{BridgeListPath: snowflakeBridges(t), ProxyHold: time.Millisecond})
		c := tb.dial(t)
		write(t, c, rawRequest("POST", "/proxy", vector(t, "proxy-poll-request-1.3.json")))
		got[mode.name] = dateLine.ReplaceAll(readRaw(t, bufio.NewReader(c)), []byte("Date: X\r"))
	}
	if !bytes.Equal(got["parked"], got["plain"]) {
		t.Errorf("parked response\n%q\nnet/http response\n%q", got["parked"], got["plain"])
	}
	if !bytes.HasSuffix(got["parked"], vector(t, "proxy-poll-response-nomatch.json")) {
		t.Errorf("parked response %q does not end with the no-match vector", got["parked"])
	}
}

// TestParkedKeepAlive checks that a connection goes back to the HTTP
// server after a parked poll, whether it ended with or without a match.
func TestParkedKeepAlive(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	tb.client.Transport.(*http.Transport).MaxConnsPerHost = 1 // one connection: each request waits for it
	clients := &http.Transport{}                              // the clients' own connections
	defer clients.CloseIdleConnections()
	other := &testBroker{client: &http.Client{Transport: clients}}
	var reused []bool
	trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
	do := func(path string, body []byte) response {
		t.Helper()
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(t.Context(), trace), http.MethodPost, tb.srv.URL+path, bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := tb.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return response{status: resp.StatusCode, header: resp.Header, body: data}
	}
	for i := range 3 {
		sid := fmt.Sprint("keepalive", i)
		res := async(func() response { return do("/proxy", proxyPoll(t, sid, messages.NATUnrestricted, 0, ptr(""))) })
		tb.rec.waitStarted(t, 1)
		tb.waitParked(t, 1)
		client := async(func() response {
			return other.doURL(t, tb.srv.URL+"/client", clientPoll(t, sd(t, "offer", sid), messages.NATUnrestricted, ""))
		})
		r, err := messages.DecodeProxyPollResponse((<-res).body)
		if err != nil || r.Status != messages.StatusClientMatch {
			t.Fatalf("poll %d: %+v, %v", i, r, err)
		}
		expect(t, "answer", do("/answer", proxyAnswer(t, sid, sd(t, "answer", sid))), http.StatusOK, []byte(`{"Status":"success"}`))
		if c := <-client; c.status != http.StatusOK || !bytes.Contains(c.body, []byte(`"answer"`)) {
			t.Fatalf("client %d: %d %q", i, c.status, c.body)
		}
	}
	// And once more after a poll that ended without a match.
	res := async(func() response {
		return do("/proxy", proxyPoll(t, "keepalive-last", messages.NATUnrestricted, 0, ptr("")))
	})
	tb.rec.waitStarted(t, 1)
	tb.waitParked(t, 1)
	tb.Close() // "no match", and this connection closes: the transport dials again
	if r, err := messages.DecodeProxyPollResponse((<-res).body); err != nil || r.Status != messages.StatusNoMatch {
		t.Fatalf("last poll: %+v, %v", r, err)
	}
	want := []bool{false, true, true, true, true, true, true}
	if fmt.Sprint(reused) != fmt.Sprint(want) {
		t.Errorf("connection reused per request = %v, want %v", reused, want)
	}
}

// doURL posts body to url with tb's client.
func (tb *testBroker) doURL(t testing.TB, url string, body []byte) response {
	t.Helper()
	resp, err := tb.client.Post(url, "text/plain", bytes.NewReader(body))
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
		return response{}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Errorf("POST %s: %v", url, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// TestParkedPipelined sends a second request before the poll's response:
// in the same write as the poll (net/http has buffered it when the poll
// is parked) and while the poll is parked (the parked poll reads it). Both
// are answered, in order, on the same connection.
func TestParkedPipelined(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: 100 * time.Millisecond})
	nomatch := string(vector(t, "proxy-poll-response-nomatch.json"))
	robots := "User-agent: *\nDisallow: /\n"
	c := tb.dial(t)
	br := bufio.NewReader(c)
	poll := rawRequest("POST", "/proxy", proxyPoll(t, "pipelined", messages.NATUnrestricted, 0, ptr("")))
	get := []byte("GET /robots.txt HTTP/1.1\r\nHost: broker\r\n\r\n")

	write(t, c, append(append([]byte(nil), poll...), get...))
	tb.rec.waitStarted(t, 1)
	for _, want := range []string{nomatch, robots} {
		if got := readRaw(t, br); !bytes.HasSuffix(got, []byte(want)) {
			t.Fatalf("response %q, want body %q", got, want)
		}
	}

	write(t, c, poll)
	tb.rec.waitStarted(t, 1)
	tb.waitParked(t, 1)
	write(t, c, get)
	for _, want := range []string{nomatch, robots} {
		if got := readRaw(t, br); !bytes.HasSuffix(got, []byte(want)) {
			t.Fatalf("response %q, want body %q", got, want)
		}
	}
	if s := tb.Stats(); s != (broker.Stats{}) {
		t.Errorf("Stats = %+v", s)
	}
}

// TestParkedFlood: a proxy that sends more than a request's worth while
// its poll is parked is dropped and leaves the pool.
func TestParkedFlood(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	c := tb.dial(t)
	write(t, c, rawRequest("POST", "/proxy", proxyPoll(t, "flood", messages.NATUnrestricted, 0, ptr(""))))
	tb.rec.waitStarted(t, 1)
	tb.waitParked(t, 1)
	write(t, c, bytes.Repeat([]byte("x"), 5000))
	if o := <-tb.rec.endedCh; o != event.ProxyGone {
		t.Errorf("outcome = %v, want gone", o)
	}
	expectEOF(t, bufio.NewReader(c))
	if s := tb.Stats(); s != (broker.Stats{}) {
		t.Errorf("Stats = %+v", s)
	}
}

// TestParkedNoGoroutine: parked polls hold no goroutine each (one watcher
// serves them all), and a proxy that leaves is still noticed at once.
func TestParkedNoGoroutine(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	const n = 100
	poll := func(i int) net.Conn {
		c := tb.dial(t)
		write(t, c, rawRequest("POST", "/proxy", proxyPoll(t, fmt.Sprint("nogoroutine", i), messages.NATUnrestricted, 0, ptr(""))))
		return c
	}
	// The watcher starts with the first parked poll.
	first := poll(0)
	tb.waitParked(t, 1)
	before := runtime.NumGoroutine()
	for i := 1; i < n; i++ {
		poll(i)
	}
	tb.waitParked(t, n)
	// A little slack for goroutines of net/http or the runtime that come
	// and go; one per poll would be 99.
	if grown := runtime.NumGoroutine() - before; grown > n/10 {
		t.Errorf("%d more goroutines with %d more parked polls", grown, n-1)
	}
	first.Close()
	if o := <-tb.rec.endedCh; o != event.ProxyGone {
		t.Errorf("outcome = %v, want gone", o)
	}
	if s := tb.Stats(); s.WaitingUnrestricted != n-1 {
		t.Errorf("Stats = %+v, want %d waiting", s, n-1)
	}
}

// TestParkedClose: Close answers parked polls at once with
// "Connection: close", closes their connections and the idle connections
// of earlier parked polls, and returns once they are closed.
func TestParkedClose(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: longHold})
	// An idle connection: its poll was matched and answered.
	idle := tb.dial(t)
	idleR := bufio.NewReader(idle)
	write(t, idle, rawRequest("POST", "/proxy", proxyPoll(t, "idle", messages.NATUnrestricted, 0, ptr(""))))
	tb.rec.waitStarted(t, 1)
	tb.waitParked(t, 1)
	client := async(func() response {
		return tb.post(t, "/client", clientPoll(t, sd(t, "offer", "x"), messages.NATUnrestricted, ""))
	})
	if m := readRaw(t, idleR); !bytes.Contains(m, []byte(messages.StatusClientMatch)) || bytes.Contains(m, []byte("Connection: close")) {
		t.Fatalf("match response %q", m)
	}
	tb.post(t, "/answer", proxyAnswer(t, "idle", sd(t, "answer", "a")))
	<-client

	const n = 5
	var waiting [n]*bufio.Reader
	for i := range n {
		c := tb.dial(t)
		waiting[i] = bufio.NewReader(c)
		write(t, c, rawRequest("POST", "/proxy", proxyPoll(t, fmt.Sprint("waiting", i), messages.NATRestricted, 0, ptr(""))))
	}
	tb.rec.waitStarted(t, n)
	tb.waitParked(t, n)
	tb.Close()
	for _, br := range waiting {
		m := readRaw(t, br)
		if !bytes.Contains(m, []byte("\r\nConnection: close\r\n")) || !bytes.HasSuffix(m, vector(t, "proxy-poll-response-nomatch.json")) {
			t.Errorf("response at shutdown %q", m)
		}
		expectEOF(t, br)
	}
	expectEOF(t, idleR)
}

// TestParkedIdleTimeout: after its poll, a connection is kept for the
// server's IdleTimeout, then closed.
func TestParkedIdleTimeout(t *testing.T) {
	b, err := broker.New(broker.Config{ProxyHold: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	b.SetParkAfter(0)
	srv := httptest.NewUnstartedServer(b.Handler())
	srv.Config.IdleTimeout = 10 * time.Millisecond
	srv.Listener = b.Listener(srv.Listener, nil)
	srv.Start()
	t.Cleanup(func() { b.Close(); srv.Close() })
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	write(t, c, rawRequest("POST", "/proxy", proxyPoll(t, "idler", messages.NATUnrestricted, 0, ptr(""))))
	readRaw(t, br)
	expectEOF(t, br)
}

// TestParkedConnectionClose: a poll on a connection that asks to be
// closed is answered by net/http, which closes it.
func TestParkedConnectionClose(t *testing.T) {
	tb := newTestBroker(t, broker.Config{ProxyHold: time.Millisecond})
	c := tb.dial(t)
	br := bufio.NewReader(c)
	body := proxyPoll(t, "closing", messages.NATUnrestricted, 0, ptr(""))
	write(t, c, fmt.Appendf(nil, "POST /proxy HTTP/1.1\r\nHost: broker\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
	if m := readRaw(t, br); !bytes.Contains(m, []byte("\r\nConnection: close\r\n")) {
		t.Errorf("response %q", m)
	}
	expectEOF(t, br)
}

// tlsConfigs returns a server config with a fresh self-signed certificate
// for 127.0.0.1 and a client config that trusts it.
func tlsConfigs(t testing.TB, protos ...string) (server, client *tls.Config) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "flurry test broker"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		NextProtos:   protos,
		MinVersion:   tls.VersionTLS12,
	}
	return server, &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
}

// TestParkedTLS serves the broker over TLS from its listener (as
// flurry-broker does): polls over HTTP/1.1 are parked and their
// connections reused, a proxy that disconnects leaves the pool at once;
// over HTTP/2 polls wait in their handler.
func TestParkedTLS(t *testing.T) {
	for _, proto := range []string{"http/1.1", "h2"} {
		t.Run(proto, func(t *testing.T) {
			rec := newRecorder()
			b, err := broker.NewWithSink(broker.Config{ProxyHold: longHold}, rec)
			if err != nil {
				t.Fatal(err)
			}
			b.SetParkAfter(0)
			serverTLS, clientTLS := tlsConfigs(t, proto, "http/1.1")
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			srv := &http.Server{Handler: b.Handler(), ReadHeaderTimeout: 10 * time.Second}
			served := make(chan error, 1)
			go func() { served <- srv.Serve(b.Listener(ln, serverTLS)) }()
			tr := &http.Transport{TLSClientConfig: clientTLS.Clone(), ForceAttemptHTTP2: proto == "h2", MaxConnsPerHost: 1}
			defer func() {
				b.Close()
				if err := srv.Shutdown(t.Context()); err != nil {
					t.Error(err)
				}
				if err := <-served; !errors.Is(err, http.ErrServerClosed) {
					t.Error(err)
				}
				tr.CloseIdleConnections()
			}()
			tb := &testBroker{Broker: b, rec: rec, client: &http.Client{Transport: tr}}
			base := "https://" + ln.Addr().String()

			var protos []int
			var reused []bool
			trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) { reused = append(reused, i.Reused) }}
			post := func(ctx context.Context, path string, body []byte) (response, error) {
				req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, base+path, bytes.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				resp, err := tb.client.Do(req)
				if err != nil {
					return response{}, err
				}
				defer resp.Body.Close()
				protos = append(protos, resp.ProtoMajor)
				data, err := io.ReadAll(resp.Body)
				return response{status: resp.StatusCode, body: data}, err
			}
			clientTr := &http.Transport{TLSClientConfig: clientTLS.Clone()} // tr's HTTP/2 set-up changes its own
			defer clientTr.CloseIdleConnections()
			for i := range 2 {
				sid := fmt.Sprint("tls", i)
				res := make(chan response, 1)
				go func() {
					r, err := post(t.Context(), "/proxy", proxyPoll(t, sid, messages.NATUnrestricted, 0, ptr("")))
					if err != nil {
						t.Error(err)
					}
					res <- r
				}()
				rec.waitStarted(t, 1)
				client := async(func() response {
					resp, err := (&http.Client{Transport: clientTr}).Post(base+"/client", "", bytes.NewReader(clientPoll(t, sd(t, "offer", sid), messages.NATUnrestricted, "")))
					if err != nil {
						t.Error(err)
						return response{}
					}
					defer resp.Body.Close()
					data, _ := io.ReadAll(resp.Body)
					return response{status: resp.StatusCode, body: data}
				})
				if r, err := messages.DecodeProxyPollResponse((<-res).body); err != nil || r.Status != messages.StatusClientMatch {
					t.Fatalf("poll %d: %+v %v", i, r, err)
				}
				if r, err := post(t.Context(), "/answer", proxyAnswer(t, sid, sd(t, "answer", sid))); err != nil || string(r.body) != `{"Status":"success"}` {
					t.Fatalf("answer %d: %q %v", i, r.body, err)
				}
				if c := <-client; !bytes.Contains(c.body, []byte(`"answer"`)) {
					t.Fatalf("client %d: %d %q", i, c.status, c.body)
				}
			}
			// A proxy that leaves while its poll waits.
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan error, 1)
			go func() {
				_, err := post(ctx, "/proxy", proxyPoll(t, "leaver", messages.NATUnrestricted, 0, ptr("")))
				done <- err
			}()
			rec.waitStarted(t, 1)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("request error = %v", err)
			}
			var outcomes []event.ProxyOutcome
			for range 3 {
				outcomes = append(outcomes, <-rec.endedCh)
			}
			if want := []event.ProxyOutcome{event.ProxyMatched, event.ProxyMatched, event.ProxyGone}; fmt.Sprint(outcomes) != fmt.Sprint(want) {
				t.Errorf("outcomes %v, want %v", outcomes, want)
			}
			if s := b.Stats(); s != (broker.Stats{}) {
				t.Errorf("Stats = %+v", s)
			}
			wantProto := map[string]int{"http/1.1": 1, "h2": 2}[proto]
			for _, p := range protos {
				if p != wantProto {
					t.Errorf("responses over HTTP/%d, want %d", p, wantProto)
				}
			}
			if fmt.Sprint(reused[:4]) != "[false true true true]" {
				t.Errorf("connection reused per request = %v", reused)
			}
		})
	}
}
