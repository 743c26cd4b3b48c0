package broker_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/internal/testkit/sqstest"
	"github.com/flurrypt/flurry/messages"
)

const (
	sqsBrokerQueue = "snowflake-broker"
	sqsKeyID       = "AKIDBROKERTEST"
	sqsClientID    = "0123456789abcdef"
)

// sqsEnv is a broker served over HTTP plus a local SQS server.
type sqsEnv struct {
	*testBroker
	sqs *sqstest.Server
	tr  *http.Transport
}

func newSQSEnv(t testing.TB, cfg broker.Config) *sqsEnv {
	t.Helper()
	env := &sqsEnv{
		testBroker: newTestBroker(t, cfg),
		sqs:        sqstest.New(sqstest.Config{AccessKeyID: sqsKeyID}),
		tr:         &http.Transport{},
	}
	t.Cleanup(func() {
		env.sqs.Close()
		env.tr.CloseIdleConnections()
	})
	return env
}

// sqsConfig is an SQSConfig for env's server with static credentials.
func (env *sqsEnv) sqsConfig() broker.SQSConfig {
	return broker.SQSConfig{
		QueueName:       sqsBrokerQueue,
		Region:          "us-east-1",
		Endpoint:        env.sqs.URL,
		AccessKeyID:     sqsKeyID,
		SecretAccessKey: "secret",
		Transport:       env.tr,
	}
}

// runSQS starts RunSQS with cfg, waits for the broker queue to exist, and
// stops RunSQS (checking it returned nil) when the test ends.
func (env *sqsEnv) runSQS(t testing.TB, cfg broker.SQSConfig) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- env.RunSQS(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunSQS: %v", err)
		}
	})
	env.waitFor(t, "the broker queue", func() bool {
		_, ok := env.sqs.Messages(sqsBrokerQueue)
		return ok
	})
}

// waitFor waits until cond holds (re-checked on every change of the SQS
// server's state), failing the test after a generous bound.
func (env *sqsEnv) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := env.sqs.WaitUntil(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// sendClientPoll puts a poll request in the broker queue, as a client
// does, with the given ClientID attribute (none if attr is nil).
func (env *sqsEnv) sendClientPoll(t testing.TB, body []byte, attr *sqstest.MessageAttribute) {
	t.Helper()
	var attrs map[string]sqstest.MessageAttribute
	if attr != nil {
		attrs = map[string]sqstest.MessageAttribute{broker.SQSClientIDAttribute: *attr}
	}
	if !env.sqs.Send(sqsBrokerQueue, string(body), attrs) {
		t.Fatal("no broker queue")
	}
}

// waitHandled waits until the broker queue is empty: the broker deletes a
// message last, after answering.
func (env *sqsEnv) waitHandled(t testing.TB) {
	t.Helper()
	env.waitFor(t, "the message to be handled", func() bool {
		m, ok := env.sqs.Messages(sqsBrokerQueue)
		return ok && len(m) == 0
	})
}

func stringAttr(v string) *sqstest.MessageAttribute {
	return &sqstest.MessageAttribute{DataType: "String", StringValue: v}
}

// TestSQSRendezvous runs a whole rendezvous through SQS: a proxy polls over
// HTTP, a client's request arrives in the broker queue, the proxy answers,
// and the answer lands in the client's queue. It also checks the metrics
// line Snowflake's TestSQS checks.
func TestSQSRendezvous(t *testing.T) {
	metrics := filepath.Join(t.TempDir(), "metrics.log")
	env := newSQSEnv(t, broker.Config{ProxyHold: longHold, MetricsLogPath: metrics})
	env.runSQS(t, env.sqsConfig())

	proxyRes := async(func() response {
		return env.post(t, "/proxy", proxyPoll(t, "sqsproxy", messages.NATUnrestricted, 0, ptr("")))
	})
	env.rec.waitStarted(t, 1)
	offer := sd(t, "offer", "sqs")
	env.sendClientPoll(t, clientPoll(t, offer, messages.NATRestricted, ""), stringAttr(sqsClientID))

	got := <-proxyRes
	poll, err := messages.DecodeProxyPollResponse(got.body)
	if err != nil || poll.Status != messages.StatusClientMatch || poll.Offer != offer || poll.NAT != messages.NATRestricted {
		t.Fatalf("proxy got %d %q (%v)", got.status, got.body, err)
	}
	answer := sd(t, "answer", "sqs")
	expect(t, "answer", env.post(t, "/answer", proxyAnswer(t, "sqsproxy", answer)), http.StatusOK, vector(t, "proxy-answer-response-success.json"))

	env.waitHandled(t)
	msgs, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + sqsClientID)
	if !ok || len(msgs) != 1 {
		t.Fatalf("client queue: %v, %d messages", ok, len(msgs))
	}
	want, _ := messages.ClientPollResponse{Answer: answer}.Encode()
	if msgs[0].Body != string(want) {
		t.Errorf("client queue message %q, want %q", msgs[0].Body, want)
	}

	if err := env.EndMetricsPeriod(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"client-sqs-count 8", "client-sqs-ips ??=8", "client-http-count 0"} {
		if !strings.Contains(string(data), "\n"+line+"\n") {
			t.Errorf("descriptor lacks %q:\n%s", line, data)
		}
	}
}

// TestSQSMessages covers Snowflake's TestSQS cases and the replies to bad
// requests: a message without a usable ClientID creates no queue but is
// deleted; a failed queue creation sends nothing; otherwise the client
// queue gets what POST /client would answer.
func TestSQSMessages(t *testing.T) {
	errJSON := func(text string) string {
		b, _ := messages.ClientPollResponse{Error: text}.Encode()
		return string(b)
	}
	tests := []struct {
		name       string
		body       func(t testing.TB) []byte
		attr       *sqstest.MessageAttribute
		failCreate bool
		reply      string // "" means no client queue and no reply
		outcome    event.ClientOutcome
	}{
		{name: "no ClientID", attr: nil, outcome: event.ClientBadRequest},
		{name: "ClientID not hex", attr: stringAttr("../snowflake-broker"), outcome: event.ClientBadRequest},
		{name: "ClientID empty", attr: stringAttr(""), outcome: event.ClientBadRequest},
		{name: "ClientID too long", attr: stringAttr(strings.Repeat("a", broker.MaxSQSClientIDLen+1)), outcome: event.ClientBadRequest},
		{name: "ClientID a number", attr: &sqstest.MessageAttribute{DataType: "Number", StringValue: "1234"}, outcome: event.ClientBadRequest},
		{name: "queue creation fails", attr: stringAttr(sqsClientID), failCreate: true},
		{name: "no proxies", attr: stringAttr(sqsClientID), reply: string(vector(t, "client-poll-response-no-proxies.json")), outcome: event.ClientDenied},
		{name: "longest ClientID", attr: stringAttr(strings.Repeat("F", broker.MaxSQSClientIDLen)), reply: string(vector(t, "client-poll-response-no-proxies.json")), outcome: event.ClientDenied},
		{name: "legacy format", body: func(t testing.TB) []byte { return []byte(sd(t, "offer", "legacy")) }, attr: stringAttr(sqsClientID), reply: errJSON("unsupported message version"), outcome: event.ClientBadRequest},
		{name: "unknown bridge", body: func(t testing.TB) []byte {
			return clientPoll(t, sd(t, "offer", "x"), messages.NATUnknown, otherFP)
		}, attr: stringAttr(sqsClientID), reply: errJSON(messages.StrUnknownBridge), outcome: event.ClientUnknownBridge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newSQSEnv(t, broker.Config{})
			env.runSQS(t, env.sqsConfig())
			if tt.failCreate {
				env.sqs.Fail("CreateQueue", -1)
			}
			body := clientPoll(t, sd(t, "offer", "c"), messages.NATUnknown, "")
			if tt.body != nil {
				body = tt.body(t)
			}
			env.sendClientPoll(t, body, tt.attr)
			env.waitHandled(t)

			queues := env.sqs.Queues()
			if tt.reply == "" {
				if len(queues) != 1 {
					t.Errorf("queues %v, want only the broker's", queues)
				}
				if n := env.sqs.Calls("SendMessage"); n != 0 {
					t.Errorf("%d SendMessage calls, want none", n)
				}
			} else {
				msgs, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + tt.attr.StringValue)
				if !ok || len(msgs) != 1 || msgs[0].Body != tt.reply {
					t.Errorf("client queue (exists %v): %+v, want one message %q", ok, msgs, tt.reply)
				}
			}
			if wantCreate := map[bool]int{true: 2, false: 1}[tt.failCreate || tt.reply != ""]; env.sqs.Calls("CreateQueue") != wantCreate {
				t.Errorf("%d CreateQueue calls, want %d", env.sqs.Calls("CreateQueue"), wantCreate)
			}
			env.rec.mu.Lock()
			defer env.rec.mu.Unlock()
			if tt.failCreate {
				if len(env.rec.clients) != 0 {
					t.Errorf("client outcomes %v, want none", env.rec.clients)
				}
			} else if len(env.rec.clients) != 1 || env.rec.clients[0] != tt.outcome {
				t.Errorf("client outcomes %v, want [%v]", env.rec.clients, tt.outcome)
			}
		})
	}
}

// TestSQSReceiveError checks that a failed receive handles nothing and is
// retried (after a pause).
func TestSQSReceiveError(t *testing.T) {
	env := newSQSEnv(t, broker.Config{})
	env.sqs.CreateQueue(sqsBrokerQueue)
	env.sqs.Fail("ReceiveMessage", 1)
	env.sendClientPoll(t, clientPoll(t, sd(t, "offer", "c"), messages.NATUnknown, ""), stringAttr(sqsClientID))
	env.runSQS(t, env.sqsConfig())
	env.waitHandled(t)
	if n := env.sqs.Calls("ReceiveMessage"); n < 2 {
		t.Errorf("%d ReceiveMessage calls, want a retry", n)
	}
	if _, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + sqsClientID); !ok {
		t.Error("no client queue after the retry")
	}
}

// TestSQSConcurrency sends more messages than the handler limit at once:
// all are answered.
func TestSQSConcurrency(t *testing.T) {
	env := newSQSEnv(t, broker.Config{})
	cfg := env.sqsConfig()
	cfg.Concurrency = 2
	env.sqs.CreateQueue(sqsBrokerQueue)
	ids := []string{"a1", "b2", "c3", "d4", "e5", "f6", "0a", "1b", "2c", "3d", "4e", "5f"}
	for _, id := range ids {
		env.sendClientPoll(t, clientPoll(t, sd(t, "offer", id), messages.NATUnknown, ""), stringAttr(id))
	}
	env.runSQS(t, cfg)
	env.waitHandled(t)
	for _, id := range ids {
		if m, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + id); !ok || len(m) != 1 {
			t.Errorf("client %s: queue %v, %d messages", id, ok, len(m))
		}
	}
}

// TestSQSCleanup checks that old client queues are deleted, and nothing
// else: recent client queues, other queues, the broker queue.
func TestSQSCleanup(t *testing.T) {
	env := newSQSEnv(t, broker.Config{})
	old := time.Now().Add(-3 * time.Minute)
	for _, q := range []string{"snowflake-client-01", "snowflake-client-02", "snowflake-client-03", "other"} {
		env.sqs.CreateQueue(q)
	}
	env.sqs.SetLastModified("snowflake-client-01", old)
	env.sqs.SetLastModified("snowflake-client-03", old)
	env.sqs.SetLastModified("other", old)
	cfg := env.sqsConfig()
	cfg.CleanupInterval = time.Millisecond
	env.runSQS(t, cfg)
	env.sqs.SetLastModified(sqsBrokerQueue, old)
	// A second listing means the first pass is over.
	env.waitFor(t, "two cleanup passes", func() bool { return env.sqs.Calls("ListQueues") >= 2 })
	got := strings.Join(env.sqs.Queues(), " ")
	if want := "other " + sqsBrokerQueue + " snowflake-client-02"; got != want {
		t.Errorf("queues after cleanup: %s, want %s", got, want)
	}
}

func TestSQSCleanupNothing(t *testing.T) {
	env := newSQSEnv(t, broker.Config{})
	cfg := env.sqsConfig()
	cfg.CleanupInterval = time.Millisecond
	env.runSQS(t, cfg)
	env.waitFor(t, "two cleanup passes", func() bool { return env.sqs.Calls("ListQueues") >= 2 })
	if n := env.sqs.Calls("GetQueueAttributes") + env.sqs.Calls("DeleteQueue"); n != 0 {
		t.Errorf("%d attribute or delete calls without client queues", n)
	}
}

func TestSQSConfigErrors(t *testing.T) {
	env := newSQSEnv(t, broker.Config{})
	tests := []struct {
		name string
		edit func(*broker.SQSConfig)
	}{
		{"no queue name", func(c *broker.SQSConfig) { c.QueueName = "" }},
		{"bad queue name", func(c *broker.SQSConfig) { c.QueueName = "a/b" }},
		{"long queue name", func(c *broker.SQSConfig) { c.QueueName = strings.Repeat("q", 81) }},
		{"client prefix", func(c *broker.SQSConfig) { c.QueueName = "snowflake-client-x" }},
		{"no region", func(c *broker.SQSConfig) { c.Region = "" }},
		{"key without secret", func(c *broker.SQSConfig) { c.SecretAccessKey = "" }},
		{"negative concurrency", func(c *broker.SQSConfig) { c.Concurrency = -1 }},
		{"negative cleanup", func(c *broker.SQSConfig) { c.CleanupAge = -time.Second }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := env.sqsConfig()
			tt.edit(&cfg)
			if err := env.RunSQS(context.Background(), cfg); !errors.Is(err, broker.ErrInvalidConfig) {
				t.Errorf("RunSQS error = %v, want ErrInvalidConfig", err)
			}
		})
	}
	if n := env.sqs.Calls("CreateQueue"); n != 0 {
		t.Errorf("%d requests with invalid configurations", n)
	}

	t.Run("broker queue creation fails", func(t *testing.T) {
		env.sqs.Fail("CreateQueue", -1)
		defer env.sqs.Fail("CreateQueue", 0)
		if err := env.RunSQS(context.Background(), env.sqsConfig()); !errors.Is(err, broker.ErrSQS) {
			t.Errorf("RunSQS error = %v, want ErrSQS", err)
		}
	})
	t.Run("wrong credentials", func(t *testing.T) {
		cfg := env.sqsConfig()
		cfg.AccessKeyID = "AKIDOTHER"
		if err := env.RunSQS(context.Background(), cfg); !errors.Is(err, broker.ErrSQS) {
			t.Errorf("RunSQS error = %v, want ErrSQS", err)
		}
	})
}

// TestSQSProfile checks -sqs-profiles: credentials come from a named
// profile of the shared configuration files (and never from instance
// metadata).
func TestSQSProfile(t *testing.T) {
	dir := t.TempDir()
	creds := filepath.Join(dir, "credentials")
	conf := filepath.Join(dir, "config")
	if err := os.WriteFile(creds, []byte("[flurry-test]\naws_access_key_id = "+sqsKeyID+"\naws_secret_access_key = secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(conf, []byte("[profile flurry-test]\nregion = eu-west-1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_CONFIG_FILE": conf, "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SQS": "", "AWS_CA_BUNDLE": "",
	} {
		t.Setenv(k, v)
	}
	env := newSQSEnv(t, broker.Config{})
	cfg := env.sqsConfig()
	cfg.AccessKeyID, cfg.SecretAccessKey = "", ""

	t.Run("unknown profile", func(t *testing.T) {
		cfg := cfg
		cfg.Profile = "nosuchprofile"
		if err := env.RunSQS(context.Background(), cfg); !errors.Is(err, broker.ErrSQS) {
			t.Errorf("RunSQS error = %v, want ErrSQS", err)
		}
	})
	t.Run("profile", func(t *testing.T) {
		cfg := cfg
		cfg.Profile = "flurry-test"
		env.runSQS(t, cfg)
		env.sendClientPoll(t, clientPoll(t, sd(t, "offer", "p"), messages.NATUnknown, ""), stringAttr(sqsClientID))
		env.waitHandled(t)
		if m, ok := env.sqs.Messages(broker.SQSClientQueuePrefix + sqsClientID); !ok || len(m) != 1 {
			t.Errorf("client queue %v, %d messages", ok, len(m))
		}
	})
}
