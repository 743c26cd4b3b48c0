package rendezvous

import (
	"context"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

// TestWarm checks that Warm opens the connection the next exchange uses,
// to the front the exchange then goes to, and that a Warm to a front that
// has just answered opens none (the transport keeps that connection).
func TestWarm(t *testing.T) {
	for _, tt := range []struct {
		name    string
		http2   bool
		imitate string
	}{
		{name: "go tls h1"},
		{name: "go tls h2", http2: true},
		{name: "utls h1", imitate: "hellochrome_auto"},
		{name: "utls h2", http2: true, imitate: "HelloChrome_Auto"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := startTLSBroker(t, tt.http2, okHandler)
			var dials atomic.Int32
			var dialed atomic.Value
			rt, err := NewTransport(TransportConfig{
				UTLSImitate: tt.imitate,
				RootCAs:     b.roots,
				DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
					dials.Add(1)
					dialed.Store(addr)
					var d net.Dialer
					return d.DialContext(ctx, "tcp", b.srv.Listener.Addr().String())
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(rt.(interface{ CloseIdleConnections() }).CloseIdleConnections)
			h, err := NewHTTP(HTTPConfig{
				Broker:    mustURL(t, ParseBrokerURL, "https://broker.test/"),
				Fronts:    []string{"front-a.test", "front-b.test"},
				Transport: rt,
			})
			if err != nil {
				t.Fatal(err)
			}

			h.Warm()
			deadline := time.Now().Add(10 * time.Second)
			for dials.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if dials.Load() != 1 {
				t.Fatalf("Warm dialled %d times, want 1", dials.Load())
			}
			warmed := dialed.Load().(string)
			if _, err := h.Exchange(context.Background(), []byte("1.0\n{}")); err != nil {
				t.Fatal(err)
			}
			if n := dials.Load(); n != 1 {
				t.Errorf("%d dials after Warm and Exchange, want 1 (the exchange used the warmed connection)", n)
			}
			if got := b.seen().sni; got+":443" != warmed {
				t.Errorf("exchange went to %q, warmed %q", got, warmed)
			}

			// Warm again: to the front just answered nothing is dialled
			// (the exchange reuses the transport's connection), to the
			// other one a connection is.
			h.Warm()
			h.next.mu.Lock()
			picked := h.next.front
			h.next.mu.Unlock()
			want := int32(2)
			if picked+":443" == warmed {
				want = 1
			}
			if _, err := h.Exchange(context.Background(), []byte("1.0\n{}")); err != nil {
				t.Fatal(err)
			}
			if n := dials.Load(); n != want {
				t.Errorf("%d dials after the second Warm and Exchange, want %d (picked %s after %s)", n, want, picked, warmed)
			}
			if got := b.seen().sni; got != picked {
				t.Errorf("second exchange went to %q, Warm picked %q", got, picked)
			}
		})
	}
}
