package broker_test

import (
	"bufio"
	"errors"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// dialFrom opens a TCP connection to addr from the local address ip (any
// address of 127/8 is loopback).
func dialFrom(t testing.TB, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// closedAtOnce reports whether the broker closed c without a response
// (long before the read deadline, which only bounds a broken test).
func closedAtOnce(t testing.TB, c net.Conn) bool {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	n, err := c.Read(make([]byte, 1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return false
	}
	return n == 0 && err != nil
}

// getDebug sends GET /debug on c and returns the status.
func getDebug(t testing.TB, c net.Conn) (int, error) {
	t.Helper()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write([]byte("GET /debug HTTP/1.1\r\nHost: broker\r\n\r\n")); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestConnsPerAddrCap: one address holds at most MaxConnsPerAddr
// connections; one more is closed at accept, before it is read, and
// counted, while another address is served; a closed connection gives its
// place back.
func TestConnsPerAddrCap(t *testing.T) {
	const max = 4
	tb := newTestBroker(t, broker.Config{MaxConnsPerAddr: max})
	addr := tb.srv.Listener.Addr().String()
	var held []net.Conn
	for range max {
		c := dialFrom(t, "127.0.0.2", addr)
		if status, err := getDebug(t, c); err != nil || status != http.StatusOK {
			t.Fatalf("connection within the cap: %d, %v", status, err)
		}
		held = append(held, c)
	}
	for range 3 {
		if !closedAtOnce(t, dialFrom(t, "127.0.0.2", addr)) {
			t.Fatal("a connection over the cap was kept open")
		}
	}
	// Another address is served; so are the connections held.
	if got := tb.do(t, http.MethodGet, "/debug", nil, nil); got.status != http.StatusOK {
		t.Errorf("honest request from 127.0.0.1: %d", got.status)
	}
	if status, err := getDebug(t, held[0]); err != nil || status != http.StatusOK {
		t.Errorf("held connection: %d, %v", status, err)
	}
	m, _ := tb.scrape(t)
	if got := m[series("flurry_broker_connections_refused_total", "reason", "addr_limit")]; got != 8 {
		t.Errorf("connections refused: %v, want 8 (3, rounded up to a multiple of 8)", got)
	}
	// A closed connection gives its place back (once the broker
	// has seen the close).
	held[0].Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		c := dialFrom(t, "127.0.0.2", addr)
		status, err := getDebug(t, c)
		if err == nil && status == http.StatusOK {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("no place given back after a close: %d, %v", status, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
