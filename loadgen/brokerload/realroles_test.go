package brokerload

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
)

// These tests drive Flurry's own broker and relay in-process. Only tests
// import role packages; the load generator itself speaks the wire protocol.

func TestRealBroker(t *testing.T) {
	for _, parked := range []bool{true, false} {
		t.Run(map[bool]string{true: "parked polls", false: "plain server"}[parked], func(t *testing.T) {
			testRealBroker(t, parked)
		})
	}
}

// testRealBroker runs the broker on its own listener (as flurry-broker
// does: waiting polls are parked off net/http) or on a plain server.
func testRealBroker(t *testing.T, parked bool) {
	// Every simulated peer comes from one address: measure, do not limit.
	b, err := broker.New(broker.Config{DisableRateLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(b.Handler())
	if parked {
		srv.Listener = b.Listener(srv.Listener, nil)
	}
	srv.Start()
	defer srv.Close()
	defer b.Close()

	res, err := RunBroker(loadgentest.Context(t), BrokerConfig{
		URL: srv.URL, Proxies: 16, Clients: []int{1, 4}, StepDuration: 400 * time.Millisecond,
		IdlePolls: []int{25}, IdleSettle: 50 * time.Millisecond, IdleBurst: parked,
	})
	if err != nil {
		t.Fatalf("RunBroker: %v (%+v)", err, res)
	}
	if res.Idle.Steps[0].Waiting != 25 || res.Idle.Errors != 0 || res.Idle.Matched != 0 || res.Idle.Burst != parked {
		t.Errorf("idle %+v", res.Idle)
	}
	for _, s := range res.Steps {
		if s.Matches == 0 || s.Errors != 0 || s.Offers != s.Matches+s.Denials+s.Timeouts+s.Errors {
			t.Errorf("step %+v (errors %v)", s, res.ErrorSamples)
		}
	}
	if res.Proxy.Errors != 0 || res.Proxy.AnswerErrors != 0 || res.Proxy.RelayPatternRejected != 0 {
		t.Errorf("proxy counts %+v (errors %v)", res.Proxy, res.ErrorSamples)
	}
}
