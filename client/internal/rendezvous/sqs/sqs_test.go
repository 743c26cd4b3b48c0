package sqs

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/sqscreds"
	"github.com/flurrypt/flurry/internal/testkit/sqstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	testKeyID       = "AKIDCLIENTTEST"
	testBrokerQueue = "snowflake-broker"
	testRequest     = "1.0\n{\"offer\":\"o\",\"nat\":\"unknown\",\"fingerprint\":\"\"}"
	testAnswer      = `{"answer":"a"}`
)

var clientIDPattern = regexp.MustCompile(`^[0-9a-f]{16}$`)

func testCredentials(t testing.TB, keyID string) string {
	t.Helper()
	s, err := sqscreds.Credentials{AccessKeyID: keyID, SecretKey: "secret"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// newTestRendezvous starts a local SQS server with the broker queue and
// returns it with a Rendezvous pointed at it (short timings).
func newTestRendezvous(t testing.TB, timeout time.Duration) (*Rendezvous, *sqstest.Server) {
	t.Helper()
	srv := sqstest.New(sqstest.Config{AccessKeyID: testKeyID})
	tr := &http.Transport{}
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	r, err := New(Config{
		QueueURL:     srv.CreateQueue(testBrokerQueue),
		Credentials:  testCredentials(t, testKeyID),
		Endpoint:     srv.URL,
		Transport:    tr,
		Timeout:      timeout,
		PollInterval: 5 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r, srv
}

// fakeBroker plays the broker's side on srv once: it takes the request
// from the broker queue, checks it, and (if reply) creates the client
// queue (if create) and sends reply. It returns the ClientID it saw, or ""
// if ctx ended before the request came.
func fakeBroker(ctx context.Context, t testing.TB, srv *sqstest.Server, create bool, reply string) <-chan string {
	t.Helper()
	ch := make(chan string, 1)
	go func() {
		var msg sqstest.Message
		err := srv.WaitUntil(ctx, func() bool {
			m, _ := srv.Messages(testBrokerQueue)
			if len(m) == 0 {
				return false
			}
			msg = m[0]
			return true
		})
		if err != nil {
			ch <- ""
			return
		}
		id := msg.Attributes[ClientIDAttribute]
		if msg.Body != testRequest || id.DataType != "String" {
			t.Errorf("broker queue got %q with ClientID %+v", msg.Body, id)
		}
		if create {
			srv.CreateQueue(ClientQueuePrefix + id.StringValue)
			if reply != "" {
				srv.Send(ClientQueuePrefix+id.StringValue, reply, nil)
			}
		}
		ch <- id.StringValue
	}()
	return ch
}

func TestNew(t *testing.T) {
	creds := testCredentials(t, testKeyID)
	tests := []struct {
		name       string
		cfg        Config
		wantRegion string
		wantErr    error
	}{
		{"snowflake's queue", Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/893902434899/snowflake-broker", Credentials: creds}, "us-east-1", nil},
		{"other region", Config{QueueURL: "https://sqs.ap-southeast-2.amazonaws.com/1/q", Credentials: creds}, "ap-southeast-2", nil},
		{"with port", Config{QueueURL: "https://sqs.eu-west-1.amazonaws.com:443/1/q", Credentials: creds}, "eu-west-1", nil},
		{"endpoint, local queue", Config{QueueURL: "http://127.0.0.1:1/000000000000/q", Credentials: creds, Endpoint: "http://127.0.0.1:1"}, "us-east-1", nil},
		{"endpoint, AWS queue", Config{QueueURL: "https://sqs.eu-north-1.amazonaws.com/1/q", Credentials: creds, Endpoint: "http://127.0.0.1:1"}, "eu-north-1", nil},
		{"http", Config{QueueURL: "http://sqs.us-east-1.amazonaws.com/1/q", Credentials: creds}, "", ErrQueueURL},
		{"not sqs", Config{QueueURL: "https://example.com/1/q", Credentials: creds}, "", ErrQueueURL},
		{"suffix trick", Config{QueueURL: "https://sqs.us-east-1.amazonaws.com.example.com/1/q", Credentials: creds}, "", ErrQueueURL},
		{"user info", Config{QueueURL: "https://u:p@sqs.us-east-1.amazonaws.com/1/q", Credentials: creds}, "", ErrQueueURL},
		{"empty", Config{Credentials: creds}, "", ErrQueueURL},
		{"endpoint, relative queue", Config{QueueURL: "/q", Credentials: creds, Endpoint: "http://127.0.0.1:1"}, "", ErrQueueURL},
		{"bad endpoint", Config{QueueURL: "http://127.0.0.1:1/q", Credentials: creds, Endpoint: "127.0.0.1:1"}, "", ErrEndpoint},
		{"no credentials", Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q"}, "", ErrCredentials},
		{"bad credentials", Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", Credentials: "not base64!"}, "", ErrCredentials},
		{"negative timeout", Config{QueueURL: "https://sqs.us-east-1.amazonaws.com/1/q", Credentials: creds, Timeout: -1}, "", ErrQueueURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.cfg.Transport = &http.Transport{}
			r, err := New(tt.cfg)
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("New error = %v, want %v", err, tt.wantErr)
			}
			if err == nil && r.client.Options().Region != tt.wantRegion {
				t.Errorf("region %q, want %q", r.client.Options().Region, tt.wantRegion)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows the credentials", err)
			}
		})
	}
}

func TestParseRegion(t *testing.T) {
	if r, err := ParseRegion("https://sqs.us-gov-west-1.amazonaws.com/1/q"); err != nil || r != "us-gov-west-1" {
		t.Errorf("ParseRegion = %q, %v", r, err)
	}
	if _, err := ParseRegion("https://sqs..amazonaws.com/1/q"); !errors.Is(err, ErrQueueURL) {
		t.Errorf("empty region: %v", err)
	}
}

func TestExchange(t *testing.T) {
	r, srv := newTestRendezvous(t, 20*time.Second)
	ids := fakeBroker(context.Background(), t, srv, true, testAnswer)
	got, err := r.Exchange(context.Background(), []byte(testRequest))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != testAnswer {
		t.Errorf("answer %q, want %q", got, testAnswer)
	}
	id := <-ids
	if !clientIDPattern.MatchString(id) {
		t.Errorf("ClientID %q is not 16 lowercase hex digits", id)
	}
	// The client deleted its queue (Snowflake item 24); the request stays
	// for the broker to delete.
	if q := srv.Queues(); len(q) != 1 || q[0] != testBrokerQueue {
		t.Errorf("queues after the exchange: %v", q)
	}
}

// TestExchangeFreshClientIDs checks that concurrent exchanges use distinct
// ClientIDs and each gets its own answer.
func TestExchangeFreshClientIDs(t *testing.T) {
	r, srv := newTestRendezvous(t, 20*time.Second)
	// A broker that answers every request with its own ClientID.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-stop:
			case <-ctx.Done():
			}
			cancel()
		}()
		seen := map[string]bool{}
		_ = srv.WaitUntil(ctx, func() bool {
			m, _ := srv.Messages(testBrokerQueue)
			for _, msg := range m {
				id := msg.Attributes[ClientIDAttribute].StringValue
				if !seen[id] {
					seen[id] = true
					srv.CreateQueue(ClientQueuePrefix + id)
					srv.Send(ClientQueuePrefix+id, `{"answer":"`+id+`"}`, nil)
				}
			}
			return false
		})
	})
	defer func() { close(stop); wg.Wait() }()

	const n = 4
	answers := make(chan string, n)
	var clients sync.WaitGroup
	for range n {
		clients.Go(func() {
			got, err := r.Exchange(context.Background(), []byte(testRequest))
			if err != nil {
				t.Error(err)
			}
			answers <- string(got)
		})
	}
	clients.Wait()
	close(answers)
	seen := map[string]bool{}
	for a := range answers {
		if seen[a] {
			t.Errorf("answer %q twice", a)
		}
		seen[a] = true
	}
}

func TestExchangeErrors(t *testing.T) {
	tests := []struct {
		name string
		// setup prepares srv before the exchange and may start a broker,
		// which stops when ctx ends.
		setup func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string
		// timeout is Config.Timeout: long, unless its expiry is what the
		// case checks.
		timeout time.Duration
		// giveUp, if set, reports when the caller gives up (cancels the
		// exchange); it is called after every change of srv's state.
		giveUp  func(srv *sqstest.Server) bool
		wantErr error // nil: any error that is not ErrNoAnswer
		keep    bool  // the client queue may remain (made after the client gave up)
	}{
		{
			// Snowflake: GetQueueUrl fails 5 times, then an error. The
			// queue never comes, so the exchange ends at its timeout,
			// however long each step takes.
			name: "client queue never created",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				return fakeBroker(ctx, t, srv, false, "")
			},
			timeout: 300 * time.Millisecond,
			wantErr: ErrNoAnswer,
		},
		{
			// Snowflake returns an empty answer here (item 24). The caller
			// gives up once the client is waiting on its queue.
			name: "no answer",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				return fakeBroker(ctx, t, srv, true, "")
			},
			giveUp:  func(srv *sqstest.Server) bool { return srv.Calls("ReceiveMessage") > 0 },
			wantErr: ErrNoAnswer,
		},
		{
			name: "GetQueueUrl fails",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				srv.Fail("GetQueueUrl", -1)
				return fakeBroker(ctx, t, srv, true, testAnswer)
			},
			keep: true,
		},
		{
			name: "ReceiveMessage fails",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				srv.Fail("ReceiveMessage", -1)
				return fakeBroker(ctx, t, srv, true, testAnswer)
			},
		},
		{
			name: "SendMessage fails",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				srv.Fail("SendMessage", -1)
				return nil
			},
		},
		{
			name: "answer too large",
			setup: func(ctx context.Context, t testing.TB, srv *sqstest.Server) <-chan string {
				return fakeBroker(ctx, t, srv, true, strings.Repeat("a", MaxResponseSize+1))
			},
			wantErr: ErrResponseTooLarge,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timeout := tt.timeout
			if timeout == 0 {
				timeout = time.Minute
			}
			r, srv := newTestRendezvous(t, timeout)
			// The broker stops looking for the request once the exchange
			// is over, in case it ended before the request was sent.
			brokerCtx, stopBroker := context.WithCancel(context.Background())
			defer stopBroker()
			broker := tt.setup(brokerCtx, t, srv)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var caller sync.WaitGroup
			if tt.giveUp != nil {
				caller.Go(func() {
					if srv.WaitUntil(ctx, func() bool { return tt.giveUp(srv) }) == nil {
						cancel()
					}
				})
			}
			got, err := r.Exchange(ctx, []byte(testRequest))
			cancel()
			caller.Wait()
			if tt.wantErr != nil {
				stopBroker()
			}
			if broker != nil {
				<-broker
			}
			if err == nil || got != nil {
				t.Fatalf("Exchange = %q, %v; want an error and no answer", got, err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && errors.Is(err, ErrNoAnswer) {
				t.Errorf("error %v, want the SQS error, not a timeout", err)
			}
			if q := srv.Queues(); !tt.keep && len(q) != 1 {
				t.Errorf("queues after the exchange: %v, want only the broker's", q)
			}
		})
	}
}

func TestExchangeRequestTooLarge(t *testing.T) {
	r, srv := newTestRendezvous(t, time.Second)
	if _, err := r.Exchange(context.Background(), make([]byte, MaxRequestSize+1)); !errors.Is(err, ErrRequestTooLarge) {
		t.Errorf("error %v, want ErrRequestTooLarge", err)
	}
	if n := srv.Calls("SendMessage"); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

// TestExchangeCanceled checks that the caller's context ends an exchange.
func TestExchangeCanceled(t *testing.T) {
	r, srv := newTestRendezvous(t, time.Minute)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-fakeBroker(context.Background(), t, srv, true, "")
		// Cancel once the client long-polls its queue.
		_ = srv.WaitUntil(context.Background(), func() bool { return srv.Calls("ReceiveMessage") > 0 })
		cancel()
	}()
	_, err := r.Exchange(ctx, []byte(testRequest))
	if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want ErrNoAnswer and context.Canceled", err)
	}
	if q := srv.Queues(); len(q) != 1 {
		t.Errorf("queues after a canceled exchange: %v", q)
	}
}

// TestWrongCredentials checks that the decoded key is what signs requests.
func TestWrongCredentials(t *testing.T) {
	srv := sqstest.New(sqstest.Config{AccessKeyID: testKeyID})
	tr := &http.Transport{}
	defer func() { srv.Close(); tr.CloseIdleConnections() }()
	r, err := New(Config{QueueURL: srv.CreateQueue(testBrokerQueue), Credentials: testCredentials(t, "AKIDOTHER"), Endpoint: srv.URL, Transport: tr})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Exchange(context.Background(), []byte(testRequest)); err == nil || errors.Is(err, ErrNoAnswer) {
		t.Errorf("error %v, want a refusal", err)
	}
}
