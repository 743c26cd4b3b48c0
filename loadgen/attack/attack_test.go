package attack

import (
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/testkit/chaintest"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/relay"
)

// TestRelayAttacks runs each relay attack, small, against Flurry's relay
// in-process and checks what it reports against what the relay counted.
func TestRelayAttacks(t *testing.T) {
	target, err := tcptarget.Start(tcptarget.Config{Mode: tcptarget.Random})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	ctx := loadgentest.Context(t)
	start := func(cfg relay.Config) (*relay.Relay, string) {
		cfg.ForwardAddr = target.Addr()
		return chaintest.StartRelay(t, cfg)
	}

	t.Run("relay-sessions", func(t *testing.T) {
		r, url := start(relay.Config{NewSessionRate: 1, NewSessionBurst: 5})
		res, err := RunSessionFlood(ctx, SessionFloodConfig{
			AttackTarget: AttackTarget{URL: url, Concurrency: 4, Source: "127.0.0.2"}, Conns: 200, Packet: PacketNop, HonestBytes: 1 << 20,
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Attempted != 200 || res.Completed != 200 {
			t.Errorf("attempted %d, completed %d; want 200, 200 (%v)", res.Attempted, res.Completed, res.Errors)
		}
		if h := res.HonestCheck; h == nil || !h.Intact || h.Bytes != 1<<20 {
			t.Errorf("honest download %+v, want 1 MiB intact", h)
		}
		// Every connection either starts a session or is refused one
		// (the relay may still be reading the last ones).
		deadline := time.Now().Add(30 * time.Second)
		for {
			st := r.Stats()
			refused := int64(st.SessionsRefused["addr_budget"])
			if refused+st.Sessions-1 == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d refused + %d flood sessions, want 200", refused, st.Sessions-1)
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	t.Run("carrier-hold", func(t *testing.T) {
		_, url := start(relay.Config{MaxCarriersPerAddr: 8})
		res, err := RunCarrierHold(ctx, CarrierHoldConfig{AttackTarget: AttackTarget{URL: url, Concurrency: 1, Source: "127.0.0.3"}, Carriers: 12, Hold: 10 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 8 || res.Refused != 4 {
			t.Errorf("opened %d, refused %d; want 8, 4 (-max-carriers-per-addr 8)", res.Completed, res.Refused)
		}
	})
	t.Run("slowloris", func(t *testing.T) {
		_, url := start(relay.Config{HandshakeTimeout: 300 * time.Millisecond})
		res, err := RunSlowloris(ctx, SlowlorisConfig{AttackTarget: AttackTarget{URL: url, Source: "127.0.0.4"}, Conns: 5, Interval: 50 * time.Millisecond, Duration: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if res.Completed != 5 || res.Extra[1].Value != "5" {
			t.Errorf("opened %d, closed by the relay %s; want 5, 5", res.Completed, res.Extra[1].Value)
		}
	})
}
