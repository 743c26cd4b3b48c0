package attack

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
)

// TestRealBrokerAttack runs both broker attacks briefly against a real
// broker (with small bursts, so that a short attack meets them): the
// attacker is rate-limited, junk never reaches an honest proxy, and honest
// clients are matched in both phases.
func TestRealBrokerAttack(t *testing.T) {
	for _, attack := range []string{AttackJunkOffers, AttackAMPFlood} {
		t.Run(attack, func(t *testing.T) {
			b, err := broker.New(broker.Config{ClientRate: 1, ClientBurst: 2, AMPRate: 1, AMPBurst: 2})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(b.Handler())
			defer srv.Close()
			defer b.Close()
			res, err := RunBrokerAttack(loadgentest.Context(t), BrokerAttackConfig{
				URL: srv.URL, Attack: attack, Requests: 500, Concurrency: 4,
				Proxies: 8, Clients: 4, ClientRate: 10, Duration: time.Second,
			})
			if err != nil {
				t.Fatalf("RunBrokerAttack: %v (%+v)", err, res)
			}
			at := res.Attacker
			if at.Sent == 0 || at.RateLimited == 0 || at.Sent != at.RateLimited+at.Refused+at.Matched+at.Errors {
				t.Errorf("attacker counts %+v", at)
			}
			if res.UnanswerableOffers != 0 {
				t.Errorf("%d junk offers reached honest proxies", res.UnanswerableOffers)
			}
			if res.Baseline.Matches == 0 || res.Flood.Matches == 0 {
				t.Errorf("honest phases %+v, %+v (errors %v)", res.Baseline, res.Flood, res.ErrorSamples)
			}
		})
	}
}

// TestRealBrokerConnFlood runs the connection flood briefly, small, against
// a real broker on its own listener (where -max-conns-per-addr applies)
// with a cap of 8 connections per address: the flood's connections over
// the cap are refused and counted, by the flood and by the broker, and
// honest clients are still matched during the flood.
func TestRealBrokerConnFlood(t *testing.T) {
	b, err := broker.New(broker.Config{MaxConnsPerAddr: 8})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(b.Handler())
	srv.Listener = b.Listener(srv.Listener, nil)
	srv.Start()
	defer srv.Close()
	defer b.Close()
	ops := httptest.NewServer(b.OperatorHandler())
	defer ops.Close()
	res, err := RunBrokerAttack(loadgentest.Context(t), BrokerAttackConfig{
		URL: srv.URL, Attack: AttackConnFlood, MetricsURL: ops.URL + "/prometheus",
		FloodAddrs: []string{"127.0.0.2", "127.0.0.3"}, ConnsPerAddr: 12, Requests: 2000, HonestNewConns: true,
		Proxies: 8, Clients: 4, ClientRate: 10, Duration: time.Second,
	})
	if err != nil {
		t.Fatalf("RunBrokerAttack: %v (%+v)", err, res)
	}
	f := res.Attacker.Flood
	if f == nil || f.Opened == 0 || f.ClosedAtOnce == 0 || res.Attacker.Refused != f.ClosedAtOnce {
		t.Fatalf("flood counts %+v (attacker %+v)", f, res.Attacker)
	}
	if f.PeakHeld < 16 {
		t.Errorf("the flood held at most %d connections, want at least 16 (2 addresses at a cap of 8)", f.PeakHeld)
	}
	if bc := res.Flood.Broker; bc == nil || bc.Refused == 0 {
		t.Errorf("the broker counted no refused connection during the flood: %+v (errors %v)", bc, res.ErrorSamples)
	}
	if res.Baseline.Matches == 0 || res.Flood.Matches == 0 || res.MatchesPerSecRatio == 0 {
		t.Errorf("honest phases %+v, %+v (errors %v)", res.Baseline, res.Flood, res.ErrorSamples)
	}
}

func TestBrokerAttackConfig(t *testing.T) {
	for _, cfg := range []BrokerAttackConfig{
		{URL: "http://127.0.0.1:1", Attack: "nonsense"},
		{URL: "http://[::1]:1", Attack: AttackAMPFlood},
		{URL: "http://192.0.2.1:1", Attack: AttackAMPFlood},
		{URL: "http://127.0.0.1:1", Attack: AttackAMPFlood, AttackerAddr: "127.1.0.1"},
		{URL: "http://127.0.0.1:1", Attack: AttackAMPFlood, Requests: -1},
		{URL: "http://127.0.0.1:1", Attack: AttackConnFlood, FloodAddrs: []string{"127.2.0.1"}},
		{URL: "http://127.0.0.1:1", Attack: AttackConnFlood, ConnsPerAddr: -1},
		{URL: "http://127.0.0.1:1", Attack: AttackConnFlood, MetricsURL: "http://192.0.2.1/prometheus"},
	} {
		if _, err := RunBrokerAttack(t.Context(), cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
