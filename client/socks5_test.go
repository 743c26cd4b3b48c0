package client_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/socks5test"
	"github.com/flurrypt/flurry/messages"
)

// candidateLines returns the a=candidate lines of an SDP.
func candidateLines(sdp string) []string {
	var out []string
	for _, l := range strings.Split(sdp, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "a=candidate:") {
			out = append(out, l)
		}
	}
	return out
}

// startSOCKS5 runs a test SOCKS5 proxy (CONNECT and UDP ASSOCIATE on
// loopback, counting what it relays) until the test ends.
func startSOCKS5(tb testing.TB, cfg socks5test.Config) *socks5test.Server {
	tb.Helper()
	s, err := socks5test.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Close)
	return s
}

func TestSOCKS5ProxyValidation(t *testing.T) {
	const broker = "https://broker.test/"
	tests := []struct {
		name     string
		proxy    string
		loopback bool
		ok       bool
	}{
		{name: "ip and port", proxy: "socks5://127.0.0.1:1080", ok: true},
		{name: "credentials", proxy: "socks5://tor:secret@127.0.0.1:1080", ok: true},
		{name: "username only", proxy: "socks5://tor@127.0.0.1:1080", ok: true},
		{name: "upper-case scheme", proxy: "SOCKS5://127.0.0.1:1080", ok: true},
		{name: "name", proxy: "socks5://proxy.test:1080", ok: true},
		{name: "ipv6", proxy: "socks5://[::1]:1080", ok: true},
		{name: "trailing slash", proxy: "socks5://127.0.0.1:1080/", ok: true},
		{name: "loopback-only with localhost", proxy: "socks5://localhost:1080", loopback: true, ok: true},
		{name: "http", proxy: "http://127.0.0.1:8080"},
		{name: "socks4a", proxy: "socks4a://127.0.0.1:1080"},
		{name: "socks5h", proxy: "socks5h://127.0.0.1:1080"},
		{name: "no scheme", proxy: "127.0.0.1:1080"},
		{name: "no port", proxy: "socks5://127.0.0.1"},
		{name: "port zero", proxy: "socks5://127.0.0.1:0"},
		{name: "port too big", proxy: "socks5://127.0.0.1:65536"},
		{name: "no host", proxy: "socks5://:1080"},
		{name: "path", proxy: "socks5://127.0.0.1:1080/x"},
		{name: "query", proxy: "socks5://127.0.0.1:1080?x=1"},
		{name: "empty username", proxy: "socks5://:secret@127.0.0.1:1080"},
		{name: "long username", proxy: "socks5://" + strings.Repeat("u", 256) + ":p@127.0.0.1:1080"},
		{name: "long password", proxy: "socks5://u:" + strings.Repeat("p", 256) + "@127.0.0.1:1080"},
		{name: "not a URL", proxy: "socks5://127.0.0.1:1080/%zz"},
		{name: "loopback-only, remote proxy", proxy: "socks5://192.0.2.1:1080", loopback: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.New(client.Config{BrokerURL: broker, SOCKS5Proxy: tt.proxy, LoopbackOnly: tt.loopback})
			if tt.ok {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, client.ErrInvalidConfig) {
				t.Fatalf("New = %v, want ErrInvalidConfig", err)
			}
			if strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "ppppp") {
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestCheckSOCKS5Proxy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), hangGuard)
	defer cancel()
	good := startSOCKS5(t, socks5test.Config{Username: "tor", Password: "pt"})
	if err := client.CheckSOCKS5Proxy(ctx, good.URL()); err != nil {
		t.Errorf("good proxy: %v", err)
	}
	if st := good.Stats(); st.Associations != 1 {
		t.Errorf("proxy stats %+v, want one association", st)
	}
	if err := good.WaitAssociations(ctx, 0); err != nil {
		t.Errorf("the test association was not closed: %v", err)
	}
	noUDP := startSOCKS5(t, socks5test.Config{RefuseUDP: true})
	if err := client.CheckSOCKS5Proxy(ctx, noUDP.URL()); !errors.Is(err, client.ErrProxy) {
		t.Errorf("proxy without UDP: %v, want ErrProxy", err)
	}
	wrongPassword := strings.Replace(good.URL(), ":pt@", ":nope@", 1)
	if err := client.CheckSOCKS5Proxy(ctx, wrongPassword); !errors.Is(err, client.ErrProxy) {
		t.Errorf("wrong password: %v, want ErrProxy", err)
	}
	if err := client.CheckSOCKS5Proxy(ctx, "http://"+good.Addr()); !errors.Is(err, client.ErrInvalidConfig) {
		t.Errorf("http proxy: %v, want ErrInvalidConfig", err)
	}
}

// TestInProcessEchoSOCKS5 runs the in-process chain with Config.SOCKS5Proxy:
// the broker request must go through the proxy's CONNECT and every WebRTC
// packet through its UDP relay, and the echo must come back intact. The
// client's only address is then the proxy's (127.0.0.1), so all three
// candidate policies stay on loopback: loopback-only; keep-local (the
// host candidate, the relay address, is offered); and the default, where
// the offer carries no candidate at all (the relay address is local) and
// ICE connects through the peer-reflexive candidate the test proxy learns
// from the client's checks.
func TestInProcessEchoSOCKS5(t *testing.T) {
	tests := []struct {
		name      string
		loopback  bool
		keepLocal bool
		size      int
		offered   bool // the offer carries the relay address as host candidate
	}{
		{name: "loopback-only", loopback: true, size: transferSize / 4, offered: true},
		{name: "keep-local", keepLocal: true, size: 256 << 10, offered: true},
		{name: "default, no candidate offered", size: 256 << 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			socks := startSOCKS5(t, socks5test.Config{Username: "tor", Password: "pt"})
			relay := startTestRelay(t)
			p1 := newTestProxy(t, "p1", relay)
			broker := startTestBroker(t, p1)
			c, err := client.New(client.Config{
				BrokerURL:          broker.URL(),
				LoopbackOnly:       tt.loopback,
				KeepLocalAddresses: tt.keepLocal,
				SOCKS5Proxy:        socks.URL(),
				Logger:             chaintest.Logger(t),
				RetryMin:           100 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()

			conn := dial(t, c)
			defer conn.Close()
			checkEcho(t, conn, tt.size)
			st := socks.Stats()
			t.Logf("%d bytes echoed through the SOCKS5 proxy; proxy stats %+v", tt.size, st)
			if st.Connects < 1 {
				t.Errorf("the broker request did not go through the proxy (%d CONNECTs)", st.Connects)
			}
			if st.Associations < 1 || st.DatagramsOut < 20 || st.DatagramsIn < 20 {
				t.Errorf("WebRTC did not go through the proxy: %+v", st)
			}
			if st.Refused != 0 {
				t.Errorf("the proxy refused %d requests or datagrams", st.Refused)
			}
			offers := broker.Offers()
			if len(offers) == 0 {
				t.Fatal("the broker saw no offer")
			}
			offer, err := messages.DecodeSessionDescription(offers[0])
			if err != nil {
				t.Fatal(err)
			}
			candidates := candidateLines(offer.SDP)
			t.Logf("offered candidates: %q", candidates)
			if tt.offered {
				if len(candidates) == 0 {
					t.Error("no candidate offered, want the relay address")
				}
				for _, c := range candidates {
					if !strings.Contains(c, " udp ") || !strings.Contains(c, " 127.0.0.1 ") || !strings.Contains(c, " typ host") {
						t.Errorf("candidate %q, want a UDP host candidate on the proxy's 127.0.0.1", c)
					}
				}
			} else if len(candidates) != 0 {
				t.Errorf("candidates %q, want none (local addresses are stripped)", candidates)
			}
		})
	}
}
