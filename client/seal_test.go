package client_test

import (
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/relay"
)

// TestChainSealed runs the real chain with a relay key in the bridge line:
// the session's carriers are sealed (the relay counts no Snowflake
// carrier), survive the loss of a proxy, and every byte comes back once.
func TestChainSealed(t *testing.T) {
	key, err := tunnelseal.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.Public()
	target := chaintest.Echo(t)
	r, relayURL := chaintest.StartRelay(t, relay.Config{ForwardAddr: target, RelayKey: &key})
	_, brokerURL := chaintest.StartBroker(t, broker.Config{Bridges: chaintest.BridgeList(relayURL), PollInterval: time.Second})
	p1 := chaintest.StartProxy(t, "p1", brokerURL, relayURL)
	cfg, err := client.ApplyBridgeArgs(client.Config{
		LoopbackOnly: true,
		Logger:       chaintest.Logger(t),
		RetryMin:     100 * time.Millisecond,
	}, map[string][]string{"url": {brokerURL}, "relay-key": {pub.String()}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	conn := dial(t, c)
	defer conn.Close()
	chaintest.StartProxy(t, "p2", brokerURL, relayURL)
	res := echoTransfer(t, conn, transferSize, transferSize/3, func() { p1.Stop() })
	if res.sent != res.received {
		t.Fatalf("digest mismatch: sent %x, received %x", res.sent, res.received)
	}
	st := r.Stats()
	if st.SealFailures != 0 || st.HandshakeFailures["bad_seal"] != 0 || st.HandshakeFailures["join"] != 0 {
		t.Fatalf("relay refused sealed traffic: %+v", st)
	}
	if conn.Stats().ProxiesConnected < 2 {
		t.Fatalf("session used %d proxies, want 2", conn.Stats().ProxiesConnected)
	}
}

func TestRelayKeyArg(t *testing.T) {
	if _, err := client.ApplyBridgeArgs(client.Config{BrokerURL: "https://broker.example/"}, map[string][]string{"relay-key": {"AAAA"}}); err != nil {
		t.Fatal(err) // parsed by New
	}
	cfg, _ := client.ApplyBridgeArgs(client.Config{BrokerURL: "https://broker.example/"}, map[string][]string{"relay-key": {"AAAA"}})
	if _, err := client.New(cfg); err == nil {
		t.Fatal("a short relay-key was accepted")
	}
}
