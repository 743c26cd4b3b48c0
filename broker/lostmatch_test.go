package broker_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/messages"
)

// TestLostMatchReleasesClient checks that when the match cannot be written
// to a proxy whose poll waits in its handler (not parked), the client is
// released at once ("no proxies" here, there being no other proxy) instead
// of waiting out its minute, and the proxy gets no strike. The write fails
// because the server's write timeout has passed when the client arrives.
func TestLostMatchReleasesClient(t *testing.T) {
	rec := newRecorder()
	b, err := broker.NewWithSink(broker.Config{ProxyHold: longHold, ClientTimeout: time.Minute}, rec)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(b.Handler())
	const writeTimeout = 100 * time.Millisecond
	srv.Config.WriteTimeout = writeTimeout
	srv.Start()
	tr := &http.Transport{}
	t.Cleanup(func() {
		b.Close()
		srv.Close()
		tr.CloseIdleConnections()
	})
	c := &http.Client{Transport: tr}

	proxyDone := make(chan []byte, 1)
	go func() {
		resp, err := c.Post(srv.URL+"/proxy", "", bytes.NewReader(proxyPoll(t, "lost", messages.NATUnrestricted, 0, ptr(""))))
		if err != nil {
			proxyDone <- nil // the expected outcome: the response never came
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		proxyDone <- body
	}()
	rec.waitStarted(t, 1)
	// The poll's write deadline is wall-clock time from its arrival: let
	// it pass (nothing to observe instead).
	time.Sleep(3 * writeTimeout)

	start := time.Now()
	resp, err := c.Post(srv.URL+"/client", "", bytes.NewReader(clientPoll(t, sd(t, "offer", "c"), messages.NATRestricted, "")))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if want := vector(t, "client-poll-response-no-proxies.json"); !bytes.Equal(body, want) {
		t.Fatalf("client got %q, want %q", body, want)
	}
	// A loose bound: the client was not kept until its timeout.
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("client answered after %v", d)
	}
	if got := <-proxyDone; got != nil {
		t.Errorf("proxy got a response %q, want none (the write failed)", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.unanswered) != 0 {
		t.Errorf("proxy struck for a match it never received: %v", rec.unanswered)
	}
	if len(rec.clients) != 1 || rec.clients[0] != event.ClientDenied {
		t.Errorf("client outcomes = %v, want one denied", rec.clients)
	}
}
