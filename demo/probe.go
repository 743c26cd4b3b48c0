package demo

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"time"
)

// FreeAddr returns a loopback TCP address ("127.0.0.1:port") that was free a
// moment ago. Another program could take it before the caller does; the
// port is chosen below Linux's default range of ephemeral ports (32768 and
// up), so that the outgoing connections of the processes a test starts
// cannot take it meanwhile, and a process that cannot listen fails its
// readiness probe with a clear error.
func FreeAddr() (string, error) { return FreeAddrOn("127.0.0.1") }

// FreeAddrOn returns a TCP address on host (an IP address of this
// machine) that was free a moment ago.
func FreeAddrOn(host string) (string, error) {
	ln, err := listenFree(host)
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// FreeAddrs returns n distinct free loopback addresses (all listeners are
// held until all are chosen, so they differ).
func FreeAddrs(n int) ([]string, error) {
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	out := make([]string, 0, n)
	for range n {
		ln, err := listenFree("127.0.0.1")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().String())
	}
	return out, nil
}

// Ports FreeAddr chooses from: below Linux's default ephemeral range.
const (
	freePortLow  = 20000
	freePortHigh = 32768
)

// listenFree listens on host at a random port in [freePortLow,
// freePortHigh), or at any port the kernel gives if a few tries fail.
func listenFree(host string) (net.Listener, error) {
	for range 20 {
		port := freePortLow + rand.IntN(freePortHigh-freePortLow)
		if ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port))); err == nil {
			return ln, nil
		}
	}
	return net.Listen("tcp", net.JoinHostPort(host, "0"))
}

// Port returns the port of a host:port address as a string.
func Port(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return port
}

// TCPReady is a readiness probe: a TCP connection to addr succeeds.
func TCPReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

// newHTTPClient returns a client with its own transport that never uses
// environment proxies.
func newHTTPClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         (&net.Dialer{Timeout: timeout}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     5 * time.Second,
		},
	}
}

// HTTPReady is a readiness probe: GET url answers with status want.
func HTTPReady(url string, want int) func(context.Context) error {
	client := newHTTPClient(5 * time.Second)
	return func(ctx context.Context) error {
		_, err := httpGet(ctx, client, url, want)
		return err
	}
}

// httpGet fetches url and returns at most 1 MiB of its body, or an error if
// the status is not want.
func httpGet(ctx context.Context, client *http.Client, url string, want int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// Plain bodies: tor's directory port, for one, deflates unless told
	// not to.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != want {
		return nil, fmt.Errorf("GET %s: status %d, want %d", url, resp.StatusCode, want)
	}
	return body, nil
}

// Poll calls probe with a growing interval until it succeeds or timeout
// passes.
func Poll(ctx context.Context, timeout time.Duration, probe func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	interval := 50 * time.Millisecond
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		err := probe(pctx)
		pcancel()
		if err == nil {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w (last: %v)", ErrNotReady, ctx.Err(), err)
		case <-t.C:
		}
		interval = min(interval*2, time.Second)
	}
}
