package broker_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// closeBound bounds how long a refused request's connection may stay
// open: far below the 60 s idle timeout, far above what closing takes.
const closeBound = 10 * time.Second

// roundTrip sends the raw request req on c and reads its response.
func roundTrip(t testing.TB, c net.Conn, br *bufio.Reader, req string) *http.Response {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("%q: %v", req, err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatalf("%q: body: %v", req, err)
	}
	resp.Body.Close()
	return resp
}

// closedWithin reports whether the peer closes c within d.
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := br.ReadByte()
	return err != nil && !errors.Is(err, os.ErrDeadlineExceeded)
}

// TestRefusedRequestClosesConnection: a refused request (any 4xx) gets
// Connection: close and its connection is closed after the reply, parked
// or not, instead of being held for the idle timeout; an accepted one
// keeps its connection.
func TestRefusedRequestClosesConnection(t *testing.T) {
	refused := []struct {
		name, req string
		status    int
	}{
		{"one-byte answer", "POST /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\n\r\nx", http.StatusBadRequest},
		{"malformed poll", "POST /proxy HTTP/1.1\r\nHost: b\r\nContent-Length: 1\r\n\r\n{", http.StatusBadRequest},
		{"unknown field", "POST /answer HTTP/1.1\r\nHost: b\r\nX-Other: 1\r\nContent-Length: 1\r\n\r\nx", http.StatusBadRequest},
		{"method", "PUT /answer HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n", http.StatusMethodNotAllowed},
		// A body announced and never sent is not waited for.
		{"too large", "POST /client HTTP/1.1\r\nHost: b\r\nContent-Length: 200000\r\n\r\n", http.StatusRequestEntityTooLarge},
		{"too large, sent", "POST /client HTTP/1.1\r\nHost: b\r\nContent-Length: 200000\r\n\r\n" + strings.Repeat("x", 200000), http.StatusRequestEntityTooLarge},
		{"not found", "GET /nonexistent HTTP/1.1\r\nHost: b\r\n\r\n", http.StatusNotFound},
		{"page method", "POST /status HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n", http.StatusMethodNotAllowed},
		{"debug method", "DELETE /debug HTTP/1.1\r\nHost: b\r\n\r\n", http.StatusMethodNotAllowed},
		{"amp method", "POST /amp/client/x HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n", http.StatusMethodNotAllowed},
		{"no prometheus", "GET /prometheus HTTP/1.1\r\nHost: b\r\n\r\n", http.StatusNotFound},
	}
	for _, mode := range serveModes {
		t.Run(mode.name, func(t *testing.T) {
			tb := mode.start(t, broker.Config{})
			addr := tb.srv.Listener.Addr().String()
			for _, r := range refused {
				c := dialFrom(t, "127.0.0.1", addr)
				br := bufio.NewReader(c)
				resp := roundTrip(t, c, br, r.req)
				if resp.StatusCode != r.status || !resp.Close {
					t.Errorf("%s: %d, Connection: close %v; want %d, close", r.name, resp.StatusCode, resp.Close, r.status)
				}
				if !closedWithin(c, br, closeBound) {
					t.Errorf("%s: connection still open %v after the refusal", r.name, closeBound)
				}
				c.Close()
			}
			// Accepted requests keep their connection.
			c := dialFrom(t, "127.0.0.1", addr)
			br := bufio.NewReader(c)
			for _, req := range []string{
				"GET /debug HTTP/1.1\r\nHost: b\r\n\r\n",
				string(rawRequest("POST", "/answer", proxyAnswer(t, "nobody", sd(t, "answer", "kept")))),
				"GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n",
			} {
				resp := roundTrip(t, c, br, req)
				if resp.StatusCode != http.StatusOK || resp.Close {
					t.Errorf("%.40q: %d, Connection: close %v; want 200, kept", req, resp.StatusCode, resp.Close)
				}
			}
		})
	}
}

// getFrom sends GET path from the local address ip on a connection of its
// own and returns the status.
func getFrom(t testing.TB, ip, addr, path string) int {
	t.Helper()
	c := dialFrom(t, ip, addr)
	defer c.Close()
	return roundTrip(t, c, bufio.NewReader(c), fmt.Sprintf("GET %s HTTP/1.1\r\nHost: b\r\n\r\n", path)).StatusCode
}

// TestPageRateLimit: a flood of the operator pages from one address gets
// 429 once its bucket is empty, while another address is still served;
// /healthz and the operator handler are not limited; PublicPrometheus's
// /prometheus shares the pages' bucket.
func TestPageRateLimit(t *testing.T) {
	const burst = 5
	for name, listen := range map[string]listenerKind{"plain": plainListener, "parked": parkingListener} {
		t.Run(name, func(t *testing.T) {
			cfg := broker.Config{PageRate: 0.001, PageBurst: burst, PublicPrometheus: true}
			tb := startTestBroker(t, cfg, listen, nil, func(b *broker.Broker) { b.StopRateLimitClock() })
			addr := tb.srv.Listener.Addr().String()
			paths := []string{"/status", "/debug", "/", "/metrics", "/prometheus"}
			want := map[string]int{"/metrics": http.StatusNotFound} // no metrics log
			for i := range burst {
				p := paths[i%len(paths)]
				if got, w := getFrom(t, "127.0.0.1", addr, p), cmpOr(want[p], http.StatusOK); got != w {
					t.Fatalf("request %d (%s) within the burst = %d, want %d", i, p, got, w)
				}
			}
			for _, p := range paths {
				if got := getFrom(t, "127.0.0.1", addr, p); got != http.StatusTooManyRequests {
					t.Errorf("flooded %s = %d, want 429", p, got)
				}
			}
			if got := getFrom(t, "127.0.0.2", addr, "/status"); got != http.StatusOK {
				t.Errorf("/status from another address = %d, want 200", got)
			}
			if got := getFrom(t, "127.0.0.2", addr, "/debug"); got != http.StatusOK {
				t.Errorf("/debug from another address = %d, want 200", got)
			}
			if got := getFrom(t, "127.0.0.1", addr, "/healthz"); got != http.StatusOK {
				t.Errorf("/healthz of the flooding address = %d, want 200", got)
			}
			// The operator listener is not limited.
			op := tb.OperatorHandler()
			for i := range 3 * burst {
				for _, p := range []string{"/status", "/debug", "/prometheus"} {
					w := httptest.NewRecorder()
					r := httptest.NewRequest(http.MethodGet, p, nil)
					r.RemoteAddr = "127.0.0.1:1234"
					op.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						t.Fatalf("operator %s #%d = %d", p, i, w.Code)
					}
				}
			}
			m, _ := tb.scrape(t)
			for _, e := range []string{"status", "debug", "metrics", "prometheus"} {
				if k := series("flurry_broker_rate_limited_requests_total", "endpoint", e); m[k] == 0 {
					t.Errorf("%s = 0, want refusals counted", k)
				}
			}
		})
	}
}

// cmpOr is cmp.Or for ints (the first non-zero).
func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}
