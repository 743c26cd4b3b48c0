package demo_test

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/messages"
)

// TestBadNeighbours runs a client that sends garbage to the broker and a
// proxy that takes matches and never answers, next to a well-behaved
// client: the well-behaved client's transfers still complete, delayed at
// most by the rendezvous timeouts (a match with the silent proxy costs one
// broker client timeout and a retry), and the broker never fails with a 5xx.
func TestBadNeighbours(t *testing.T) {
	skipShort(t)
	c := startCluster(t, demo.Config{Proxies: -1, FileSize: 4 << 20})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()

	bctx, stopBad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var garbage garbageStats
	var silentMatches atomic.Int64
	firstPoll := make(chan struct{})
	wg.Go(func() { garbageClient(bctx, c.BrokerURL, &garbage) })
	wg.Go(func() { silentProxy(bctx, c.BrokerURL, &silentMatches, firstPoll) })
	defer func() {
		stopBad()
		wg.Wait()
	}()
	// The silent proxy polls first, so it has waited longest and the
	// broker offers it the first client; then two good proxies come.
	<-firstPoll
	for range 2 {
		if _, err := c.StartProxy(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Sessions one after the other (each needs a rendezvous) until one
	// has met the silent proxy.
	for i := 0; i < 5 && (i < 2 || silentMatches.Load() == 0); i++ {
		res := startTransfer(ctx, c).wait(t, c)
		t.Logf("session %d: proxy connected after %v (silent proxy matched %d times so far)",
			i+1, res.Granted.Round(time.Millisecond), silentMatches.Load())
		// A match with the silent proxy costs the broker's client timeout
		// (5 s) and the client's retry pause (at most 10 s); the garbage
		// costs nothing. Only a gross slowdown crosses twice that.
		if res.Granted > 30*time.Second {
			t.Errorf("session %d waited %v for a proxy", i+1, res.Granted)
		}
	}
	if silentMatches.Load() == 0 {
		t.Error("the silent proxy was never matched with a client; the test proved nothing about it")
	}
	stopBad()
	wg.Wait()
	t.Logf("garbage requests: %d sent, %d answered 4xx, %d answered 5xx, %d transport errors; silent proxy matched %d times",
		garbage.sent.Load(), garbage.status4xx.Load(), garbage.status5xx.Load(), garbage.errors.Load(), silentMatches.Load())
	if n := garbage.status5xx.Load(); n > 0 {
		t.Errorf("the broker answered %d garbage requests with a 5xx status", n)
	}
	if !c.Broker.Running() {
		t.Error("the broker died")
	}
}

type garbageStats struct {
	sent, status4xx, status5xx, errors atomic.Int64
}

// garbageClient posts malformed bodies to the broker's endpoints, about 50
// a second, until ctx ends. It comes from an address of its own,
// 127.0.0.66: the broker's rate limits apply to loopback too, and the
// well-behaved client at 127.0.0.1 must not share its bucket.
func garbageClient(ctx context.Context, brokerURL string, st *garbageStats) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 66)}}
	hc := &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	defer hc.CloseIdleConnections()
	bodies := []func() []byte{
		func() []byte { return randomBytes(rand.IntN(2000)) },
		func() []byte { return append([]byte("1.0\n"), randomBytes(rand.IntN(500))...) },
		func() []byte {
			return []byte(`1.0` + "\n" + `{"offer":"{\"type\":\"offer\",\"sdp\":\"garbage\"}","nat":"unknown"}`)
		},
		func() []byte { return []byte(`{"type":"offer","sdp":"v=0 but not really"}`) },
		func() []byte { return []byte(`1.0` + "\n" + `{"offer":"","nat":"<script>","fingerprint":"zz"}`) },
		func() []byte { return bytes.Repeat([]byte{'A'}, 200_000) }, // over the size limit
		func() []byte { return []byte(`{"Sid":"` + string(randomBytes(10)) + `","Version":"1.3"}`) },
	}
	paths := []string{"client", "client", "client", "proxy", "answer"}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		body := bodies[rand.IntN(len(bodies))]()
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, brokerURL+paths[rand.IntN(len(paths))], bytes.NewReader(body))
		if err != nil {
			continue
		}
		st.sent.Add(1)
		resp, err := hc.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				st.errors.Add(1)
			}
			continue
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		switch {
		case resp.StatusCode >= 500 && resp.StatusCode != http.StatusServiceUnavailable && resp.StatusCode != http.StatusGatewayTimeout:
			// 503 and 504 are the legacy client format's "no proxies"
			// and "timed out": answers, not failures.
			st.status5xx.Add(1)
		case resp.StatusCode >= 400:
			st.status4xx.Add(1)
		}
	}
}

// silentProxy polls the broker like a proxy and takes every match but never
// answers, until ctx ends.
func silentProxy(ctx context.Context, brokerURL string, matches *atomic.Int64, firstPoll chan<- struct{}) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	pattern := "^127.0.0.1$"
	var once sync.Once
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		once.Do(func() { close(firstPoll) })
	}}
	for ctx.Err() == nil {
		sid := make([]byte, 8)
		_, _ = cryptoRead(sid)
		body, err := messages.ProxyPollRequest{
			Sid: hex.EncodeToString(sid), Type: messages.ProxyTypeStandalone,
			NAT: messages.NATUnknown, AcceptedRelayPattern: &pattern,
		}.Encode()
		if err != nil {
			return
		}
		req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, brokerURL+"proxy", bytes.NewReader(body))
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if err != nil {
			wait(ctx, time.Second) // broker restarting or gone
			continue
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, messages.MaxBodySize))
		resp.Body.Close()
		if pr, err := messages.DecodeProxyPollResponse(b); err == nil && pr.Status == messages.StatusClientMatch {
			matches.Add(1) // and never POST /answer
		}
	}
}

func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = cryptoRead(b)
	return b
}

var cryptoRead = crand.Read
