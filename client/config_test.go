package client_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/theodorsm/covert-dtls/pkg/fingerprints"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/sqs"
	"github.com/flurrypt/flurry/common/covertdtls"
)

func TestNewValidation(t *testing.T) {
	// {"aws-access-key-id":"AKIDEXAMPLE","aws-secret-key":"secret"}
	const sqsCreds = "eyJhd3MtYWNjZXNzLWtleS1pZCI6IkFLSURFWEFNUExFIiwiYXdzLXNlY3JldC1rZXkiOiJzZWNyZXQifQ=="
	const broker = "https://broker.test/"
	tests := []struct {
		name string
		cfg  client.Config
		want error // nil: New succeeds
	}{
		{name: "zero", cfg: client.Config{}, want: client.ErrNoRendezvous},
		{name: "url", cfg: client.Config{BrokerURL: broker}},
		{name: "bad url", cfg: client.Config{BrokerURL: "broker.test"}, want: client.ErrInvalidConfig},
		{name: "fronts", cfg: client.Config{BrokerURL: broker, Fronts: []string{"a.test", "b.test:443"}}},
		{name: "bad front", cfg: client.Config{BrokerURL: broker, Fronts: []string{"a b"}}, want: client.ErrInvalidConfig},
		{name: "max 16", cfg: client.Config{BrokerURL: broker, Max: 16}},
		{name: "max 17", cfg: client.Config{BrokerURL: broker, Max: 17}, want: client.ErrInvalidConfig},
		{name: "max -1", cfg: client.Config{BrokerURL: broker, Max: -1}, want: client.ErrInvalidConfig},
		{name: "fingerprint 32 bytes", cfg: client.Config{BrokerURL: broker, BridgeFingerprint: "2b280b23e1107bb62abfc40ddcc8824814f80a722b280b23e1107bb62abfc40d"}},
		{name: "bad fingerprint", cfg: client.Config{BrokerURL: broker, BridgeFingerprint: "2B28"}, want: client.ErrInvalidConfig},
		{name: "utls", cfg: client.Config{BrokerURL: broker, UTLSImitate: "HelloRandomizedALPN"}},
		{name: "bad utls", cfg: client.Config{BrokerURL: broker, UTLSImitate: "hellonetscape"}, want: client.ErrInvalidConfig},
		{name: "ice", cfg: client.Config{BrokerURL: broker, ICEServers: []string{"stun:stun.test", "turn:turn.test"}}},
		{name: "loopback with ice", cfg: client.Config{BrokerURL: broker, LoopbackOnly: true, ICEServers: []string{"stun:stun.test"}}, want: client.ErrInvalidConfig},
		{name: "ampcache", cfg: client.Config{BrokerURL: broker, AMPCacheURL: "https://cdn.ampproject.org/"}},
		{name: "ampcache and fronts", cfg: client.Config{BrokerURL: broker, AMPCacheURL: "https://cdn.ampproject.org/", Fronts: []string{"www.google.test"}}},
		{name: "ampcache, broker on another port", cfg: client.Config{BrokerURL: "https://broker.test:8443/", AMPCacheURL: "https://cdn.ampproject.org/"}, want: client.ErrInvalidConfig},
		{name: "ampcache without url", cfg: client.Config{AMPCacheURL: "https://cdn.ampproject.org/"}, want: client.ErrInvalidConfig},
		{name: "bad ampcache", cfg: client.Config{BrokerURL: broker, AMPCacheURL: "https://cdn.test/?q=1"}, want: client.ErrInvalidConfig},
		{name: "sqs", cfg: client.Config{SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/893902434899/snowflake-broker", SQSCredentials: sqsCreds}},
		{name: "sqs empty creds", cfg: client.Config{SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", SQSCredentials: "e30="}, want: client.ErrInvalidConfig},
		{name: "sqs bad creds", cfg: client.Config{SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", SQSCredentials: "not base64"}, want: client.ErrInvalidConfig},
		{name: "sqs without creds", cfg: client.Config{SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q"}, want: client.ErrInvalidConfig},
		{name: "sqs bad host", cfg: client.Config{SQSQueueURL: "https://queue.test/1/q", SQSCredentials: "e30="}, want: client.ErrInvalidConfig},
		{name: "sqs and url", cfg: client.Config{BrokerURL: broker, SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", SQSCredentials: "e30="}, want: client.ErrMultipleRendezvous},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.cfg.SQSQueueURL != "" {
				tt.cfg.NewSQSRendezvous = sqs.New
			}
			c, err := client.New(tt.cfg)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				c.Close()
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("New error %v, want %v", err, tt.want)
			}
		})
	}
}

// TestSQSNeedsItsPackage: a Config asking for SQS without the package that
// links the AWS SDK says which package to use.
func TestSQSNeedsItsPackage(t *testing.T) {
	_, err := client.New(client.Config{SQSQueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", SQSCredentials: "e30="})
	if !errors.Is(err, client.ErrInvalidConfig) || !strings.Contains(err.Error(), "github.com/flurrypt/flurry/client/sqs") {
		t.Errorf("New = %v, want ErrInvalidConfig naming package client/sqs", err)
	}
}

func TestNewDoesNotModifyConfig(t *testing.T) {
	cfg := client.Config{BrokerURL: "https://broker.test/", ICEServers: []string{"stun:a.test", "stun:b.test", "stun:c.test"}}
	orig := slices.Clone(cfg.ICEServers)
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !slices.Equal(cfg.ICEServers, orig) || cfg.Max != 0 || cfg.BridgeFingerprint != "" {
		t.Errorf("New modified the caller's Config: %+v", cfg)
	}
}

func TestApplyBridgeArgs(t *testing.T) {
	base := client.Config{BrokerURL: "https://flag.test/", Max: 1}
	tests := []struct {
		name  string
		args  map[string][]string
		check func(t *testing.T, c client.Config)
		err   error
	}{
		{name: "none", args: nil, check: func(t *testing.T, c client.Config) {
			if c.BrokerURL != "https://flag.test/" || c.Max != 1 {
				t.Errorf("%+v", c)
			}
		}},
		{name: "full line", args: map[string][]string{
			"url":          {"https://1098762253.rsc.cdn77.org/"},
			"fronts":       {"www.cdn77.com,www.phpmyadmin.net"},
			"ice":          {"stun:stun.antisip.com:3478,stun:stun.epygi.com:3478"},
			"max":          {"3"},
			"fingerprint":  {"2B280B23E1107BB62ABFC40DDCC8824814F80A72"},
			"utls-imitate": {"hellorandomizedalpn"},
			"utls-nosni":   {"Yes"},
			"unknown-key":  {"ignored"},
		}, check: func(t *testing.T, c client.Config) {
			if c.BrokerURL != "https://1098762253.rsc.cdn77.org/" || !slices.Equal(c.Fronts, []string{"www.cdn77.com", "www.phpmyadmin.net"}) ||
				len(c.ICEServers) != 2 || c.Max != 3 || c.UTLSImitate != "hellorandomizedalpn" || !c.UTLSRemoveSNI {
				t.Errorf("%+v", c)
			}
		}},
		{name: "legacy front", args: map[string][]string{"front": {"a.test,b.test"}}, check: func(t *testing.T, c client.Config) {
			if !slices.Equal(c.Fronts, []string{"a.test", "b.test"}) {
				t.Errorf("fronts %q", c.Fronts)
			}
		}},
		{name: "empty fronts falls back to front", args: map[string][]string{"fronts": {""}, "front": {"a.test"}}, check: func(t *testing.T, c client.Config) {
			if !slices.Equal(c.Fronts, []string{"a.test"}) {
				t.Errorf("fronts %q", c.Fronts)
			}
		}},
		{name: "bad max", args: map[string][]string{"max": {"two"}}, err: client.ErrInvalidConfig},
		{name: "standby", args: map[string][]string{"standby": {"true"}}, check: func(t *testing.T, c client.Config) {
			if !c.Standby {
				t.Error("standby not set")
			}
		}},
		{name: "bad standby", args: map[string][]string{"standby": {"maybe"}}, err: client.ErrInvalidConfig},
		{name: "covert dtls", args: map[string][]string{"covertdtls-config": {"Randomize"}}, check: func(t *testing.T, c client.Config) {
			if c.CovertDTLS.Mode != covertdtls.Randomize {
				t.Errorf("covert DTLS %+v", c.CovertDTLS)
			}
		}},
		{name: "covert dtls fingerprint", args: map[string][]string{"covertdtls-config": {"mimic"}, "covertdtls-fingerprint": {string(fingerprints.Chrome_linux_138_0_7204_183)}}, check: func(t *testing.T, c client.Config) {
			if c.CovertDTLS.Mode != covertdtls.Mimic || c.CovertDTLS.Fingerprint != string(fingerprints.Chrome_linux_138_0_7204_183) {
				t.Errorf("covert DTLS %+v", c.CovertDTLS)
			}
		}},
		{name: "covert dtls disabled", args: map[string][]string{"covertdtls-config": {"disable"}}, check: func(t *testing.T, c client.Config) {
			if c.CovertDTLS.Mode != covertdtls.Disable {
				t.Errorf("covert DTLS %+v", c.CovertDTLS)
			}
		}},
		{name: "turn ice servers", args: map[string][]string{"ice": {"stun:stun.test,turn:u:p%2Cq@turn.test:443?transport=tcp"}}, check: func(t *testing.T, c client.Config) {
			if !slices.Equal(c.ICEServers, []string{"stun:stun.test", "turn:u:p%2Cq@turn.test:443?transport=tcp"}) {
				t.Errorf("ice %q", c.ICEServers)
			}
		}},
		{name: "bad covert dtls", args: map[string][]string{"covertdtls-config": {"chrome"}}, err: covertdtls.ErrMode},
		{name: "bad covert dtls fingerprint", args: map[string][]string{"covertdtls-config": {"mimic"}, "covertdtls-fingerprint": {"fefd"}}, err: covertdtls.ErrFingerprint},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := client.ApplyBridgeArgs(base, tt.args)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("error %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, c)
		})
	}
}

// TestTwoClients runs two clients in one process at once, each with its own
// broker: they must share nothing.
func TestTwoClients(t *testing.T) {
	for i := range 2 {
		t.Run(fmt.Sprint("client", i), func(t *testing.T) {
			t.Parallel() // both run at once
			relay := startTestRelay(t)
			p := newTestProxy(t, "p", relay)
			broker := startTestBroker(t, p)
			c := newLoopbackClient(t, broker.URL(), 1, nil)
			conn := dial(t, c)
			defer conn.Close()
			checkEcho(t, conn, 1<<20)
		})
	}
}

func TestDialAfterClose(t *testing.T) {
	c, err := client.New(client.Config{BrokerURL: "http://127.0.0.1:1/", LoopbackOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close() // idempotent
	if _, err := c.Dial(context.Background()); !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Dial after Close = %v", err)
	}
}

// TestCloseDuringDial: Client.Close ends a Dial that is still waiting for a
// proxy.
func TestCloseDuringDial(t *testing.T) {
	relay := startTestRelay(t)
	p := newTestProxy(t, "p", relay)
	p.Kill() // the broker has no proxy to offer
	broker := startTestBroker(t, p)
	events := make(chan client.Event, 16)
	c := newLoopbackClient(t, broker.URL(), 1, events)
	done := make(chan error, 1)
	go func() {
		_, err := c.Dial(context.Background())
		done <- err
	}()
	waitEvent(t, events, client.EventProxyFailed) // Dial is under way
	c.Close()
	if err := <-done; !errors.Is(err, client.ErrClosed) {
		t.Fatalf("Dial = %v, want ErrClosed", err)
	}
}
