package httpcmp

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
)

// TestServeBroker checks that every server serves the broker: a proxy poll
// held and answered "no match", a page, and a refusal.
func TestServeBroker(t *testing.T) {
	for _, server := range Servers {
		t.Run(server, func(t *testing.T) {
			b, err := broker.New(broker.Config{ProxyHold: 50 * time.Millisecond, DisableRateLimits: true, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ServeBroker(ctx, b, ln, server, slog.New(slog.DiscardHandler)) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("ServeBroker: %v", err)
				}
			}()
			url := "http://" + ln.Addr().String()
			poll := `{"Sid":"q0Dq3Cq4t2o0kB4QeWm2Vw","Version":"1.3","Type":"standalone","NAT":"unrestricted","Clients":0,"AcceptedRelayPattern":""}`
			for _, c := range []struct {
				method, path, body string
				status             int
				want               string
			}{
				{"POST", "/proxy", poll, http.StatusOK, `"Status":"no match"`},
				{"GET", "/robots.txt", "", http.StatusOK, "Disallow: /"},
				{"POST", "/answer", "{", http.StatusBadRequest, ""},
			} {
				req, _ := http.NewRequestWithContext(ctx, c.method, url+c.path, strings.NewReader(c.body))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatalf("%s %s: %v", c.method, c.path, err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.status || !strings.Contains(string(body), c.want) {
					t.Errorf("%s %s: %d %q, want %d with %q", c.method, c.path, resp.StatusCode, body, c.status, c.want)
				}
			}
		})
	}
}

func TestServeBrokerUnknown(t *testing.T) {
	b, err := broker.New(broker.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if err := ServeBroker(context.Background(), b, nil, "nginx", slog.New(slog.DiscardHandler)); err == nil {
		t.Fatal("no error for an unknown server")
	}
}
