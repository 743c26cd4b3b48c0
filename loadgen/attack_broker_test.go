package loadgen

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
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
			res, err := RunBrokerAttack(testCtx(t), BrokerAttackConfig{
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

func TestBrokerAttackConfig(t *testing.T) {
	for _, cfg := range []BrokerAttackConfig{
		{URL: "http://127.0.0.1:1", Attack: "nonsense"},
		{URL: "http://[::1]:1", Attack: AttackAMPFlood},
		{URL: "http://192.0.2.1:1", Attack: AttackAMPFlood},
		{URL: "http://127.0.0.1:1", Attack: AttackAMPFlood, AttackerAddr: "127.1.0.1"},
		{URL: "http://127.0.0.1:1", Attack: AttackAMPFlood, Requests: -1},
	} {
		if _, err := RunBrokerAttack(t.Context(), cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
