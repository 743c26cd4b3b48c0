package broker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/messages"
)

// SQS rendezvous (Snowflake's -broker-sqs-name): clients that cannot reach
// the broker over HTTPS put their poll request in an Amazon SQS queue the
// broker reads, and read the reply from a queue of their own:
//
//	broker queue <QueueName>               client queue snowflake-client-<ClientID>
//	  message body:  "1.0\n{…}"              created by the broker per request
//	  attribute ClientID (String):           message body: {"answer":…} | {"error":…}
//	    the client's hex id                  deleted by the client, or by the
//	                                         broker's cleanup 2 min later
//
// RunSQS creates the broker queue (MessageRetentionPeriod 300 s), long-polls
// it (up to 10 messages, 15 s), and handles each message in its own
// goroutine, at most SQSConfig.Concurrency at once: it checks the ClientID
// and Config.SQSGlobalRate (a message beyond it is deleted unanswered),
// creates the client queue, runs the same rendezvous as POST /client
// (ClientTimeout from the moment it took the message), sends the reply to
// the client queue and deletes the message. Every 30 s it deletes the client
// queues last modified more than 2 minutes ago.

// Defaults of SQSConfig fields left at their zero value, and SQS constants.
const (
	// DefaultSQSConcurrency bounds the messages handled at once. Each
	// holds at most a poll request (≤ 100 000 bytes) for at most
	// ClientTimeout plus two SQS calls; when all are busy, further
	// requests wait in the queue.
	DefaultSQSConcurrency = 100
	// DefaultSQSCleanupInterval is how often stale client queues are
	// deleted (Snowflake's 30 s).
	DefaultSQSCleanupInterval = 30 * time.Second
	// DefaultSQSCleanupAge is how old (last modified) a client queue must
	// be to be deleted (Snowflake's 2 min).
	DefaultSQSCleanupAge = 2 * time.Minute

	// SQSClientQueuePrefix starts every client queue's name; the ClientID
	// follows.
	SQSClientQueuePrefix = "snowflake-client-"
	// SQSClientIDAttribute is the message attribute naming the client.
	SQSClientIDAttribute = "ClientID"
	// MaxSQSClientIDLen is the longest ClientID accepted: a queue name has
	// at most 80 characters. Snowflake clients send 16 hex digits.
	MaxSQSClientIDLen = 80 - len(SQSClientQueuePrefix)

	sqsRetentionSeconds = "300" // broker queue MessageRetentionPeriod
	sqsReceiveMax       = 10    // MaxNumberOfMessages per receive
	sqsReceiveWait      = 15    // WaitTimeSeconds per receive
	// sqsCallTimeout bounds each SQS call but the long poll (which gets
	// sqsReceiveWait more).
	sqsCallTimeout = 10 * time.Second
	// sqsMaxBackoff caps the pause after failed receives.
	sqsMaxBackoff = 30 * time.Second
	// sqsMaxListPages bounds one cleanup pass (1000 queues a page).
	sqsMaxListPages = 100
)

// ErrSQS means SQS rendezvous could not start: the AWS configuration
// could not be loaded or the broker queue could not be created.
var ErrSQS = errors.New("cannot start SQS rendezvous")

// sqsQueueName is the shape of an SQS standard queue name.
var sqsQueueName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// SQSConfig configures SQS rendezvous (RunSQS). QueueName and Region are
// required.
type SQSConfig struct {
	// QueueName is the broker queue (-broker-sqs-name), created if
	// missing.
	QueueName string
	// Region is its AWS region (-broker-sqs-region), e.g. us-east-1.
	Region string

	// Profile is an AWS shared-configuration profile (one of -sqs-profiles)
	// whose credentials to use; empty means the SDK's default chain
	// (environment, shared files' default profile, instance role).
	// Ignored when AccessKeyID is set.
	Profile string
	// AccessKeyID and SecretAccessKey, when set, are the credentials, and
	// no shared configuration, environment variable or instance metadata
	// is read (tests, local SQS-compatible servers).
	AccessKeyID, SecretAccessKey string

	// Endpoint, if set, is where SQS requests go instead of the region's
	// AWS endpoint, e.g. http://127.0.0.1:4100 (-broker-sqs-endpoint).
	Endpoint string
	// Transport carries the SQS requests; nil means a transport of
	// RunSQS's own (environment proxy settings apply), whose idle
	// connections are closed when RunSQS returns.
	Transport http.RoundTripper

	// Concurrency bounds the messages handled at once; zero means
	// DefaultSQSConcurrency.
	Concurrency int
	// CleanupInterval and CleanupAge: every CleanupInterval, client queues
	// last modified more than CleanupAge ago are deleted. Zero means
	// DefaultSQSCleanupInterval and DefaultSQSCleanupAge.
	CleanupInterval, CleanupAge time.Duration
}

// withDefaults returns a copy of c with zero fields filled in, validated.
func (c SQSConfig) withDefaults() (SQSConfig, error) {
	if c.Concurrency == 0 {
		c.Concurrency = DefaultSQSConcurrency
	}
	if c.CleanupInterval == 0 {
		c.CleanupInterval = DefaultSQSCleanupInterval
	}
	if c.CleanupAge == 0 {
		c.CleanupAge = DefaultSQSCleanupAge
	}
	switch {
	case !sqsQueueName.MatchString(c.QueueName):
		return c, fmt.Errorf("%w: SQS queue name must be 1 to 80 letters, digits, - or _", ErrInvalidConfig)
	case strings.HasPrefix(c.QueueName, SQSClientQueuePrefix):
		return c, fmt.Errorf("%w: SQS queue name must not start with %s (the cleanup would delete it)", ErrInvalidConfig, SQSClientQueuePrefix)
	case c.Region == "":
		return c, fmt.Errorf("%w: SQS region missing", ErrInvalidConfig)
	case (c.AccessKeyID == "") != (c.SecretAccessKey == ""):
		return c, fmt.Errorf("%w: SQS access key id and secret access key go together", ErrInvalidConfig)
	case c.Concurrency < 0 || c.CleanupInterval < 0 || c.CleanupAge < 0:
		return c, fmt.Errorf("%w: negative SQS concurrency or cleanup time", ErrInvalidConfig)
	}
	return c, nil
}

// sqsRun is the state of one RunSQS.
type sqsRun struct {
	b        *Broker
	cfg      SQSConfig
	client   *awssqs.Client
	queueURL string
}

// RunSQS serves SQS rendezvous from the queue cfg names until ctx ends,
// then waits for the messages being handled (at most ClientTimeout plus two
// SQS calls) and returns nil. It returns an error at once if cfg is
// invalid, the credentials cannot be loaded or the broker queue cannot be
// created. Receive errors are logged and retried with a growing pause (1 s
// to 30 s). Several RunSQS (one per profile) may run at once.
func (b *Broker) RunSQS(ctx context.Context, cfg SQSConfig) error {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return err
	}
	client, closeIdle, err := newSQSClient(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeIdle()
	queueURL, err := createBrokerQueue(ctx, client, cfg.QueueName)
	if err != nil {
		return fmt.Errorf("%w: create broker queue: %w", ErrSQS, err)
	}
	r := &sqsRun{b: b, cfg: cfg, client: client, queueURL: queueURL}
	b.cfg.Logger.Info("SQS rendezvous started", "queue", cfg.QueueName, "region", cfg.Region, "profile", cfg.Profile)

	var wg sync.WaitGroup
	wg.Go(func() { r.cleanupLoop(ctx) })
	r.receiveLoop(ctx, &wg)
	wg.Wait()
	b.cfg.Logger.Info("SQS rendezvous stopped", "queue", cfg.QueueName, "profile", cfg.Profile)
	return nil
}

// newSQSClient builds the SQS client: static credentials if cfg has them
// (nothing else is read), else the SDK's default configuration for
// cfg.Profile. closeIdle closes the idle connections of a transport
// created here.
func newSQSClient(ctx context.Context, cfg SQSConfig) (client *awssqs.Client, closeIdle func(), err error) {
	endpoint := func(o *awssqs.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
	}
	closeIdle = func() {}
	if cfg.AccessKeyID != "" {
		transport := cfg.Transport
		if transport == nil {
			own := &http.Transport{
				Proxy:               http.ProxyFromEnvironment,
				ForceAttemptHTTP2:   true,
				MaxIdleConnsPerHost: 16,
				IdleConnTimeout:     90 * time.Second,
				TLSHandshakeTimeout: 10 * time.Second,
			}
			closeIdle = own.CloseIdleConnections
			transport = own
		}
		static := aws.Credentials{AccessKeyID: cfg.AccessKeyID, SecretAccessKey: cfg.SecretAccessKey, Source: "SQSConfig"}
		return awssqs.New(awssqs.Options{
			Region:      cfg.Region,
			HTTPClient:  &http.Client{Transport: transport},
			Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return static, nil }),
		}, endpoint), closeIdle, nil
	}
	// Without a Transport the SDK builds its HTTP client itself, so that
	// its settings (AWS_CA_BUNDLE and the like) apply.
	opts := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion(cfg.Region)}
	if cfg.Transport != nil {
		opts = append(opts, awsconfig.WithHTTPClient(&http.Client{Transport: cfg.Transport}))
	}
	if cfg.Profile != "" {
		opts = append(opts, awsconfig.WithSharedConfigProfile(cfg.Profile))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: load AWS configuration: %w", ErrSQS, err)
	}
	return awssqs.NewFromConfig(awsCfg, endpoint), closeIdle, nil
}

// createBrokerQueue creates the broker queue and returns its URL. A queue
// of that name that exists with other attributes (set up by the operator)
// is used as it is.
func createBrokerQueue(ctx context.Context, client *awssqs.Client, name string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, sqsCallTimeout)
	defer cancel()
	out, err := client.CreateQueue(ctx, &awssqs.CreateQueueInput{
		QueueName:  aws.String(name),
		Attributes: map[string]string{string(types.QueueAttributeNameMessageRetentionPeriod): sqsRetentionSeconds},
	})
	var exists *types.QueueNameExists
	if errors.As(err, &exists) {
		var got *awssqs.GetQueueUrlOutput
		if got, err = client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)}); err == nil {
			return aws.ToString(got.QueueUrl), nil
		}
	}
	if err != nil {
		return "", err
	}
	return aws.ToString(out.QueueUrl), nil
}

// receiveLoop long-polls the broker queue until ctx ends, starting a
// handler (counted in wg) per message, at most cfg.Concurrency at once.
func (r *sqsRun) receiveLoop(ctx context.Context, wg *sync.WaitGroup) {
	slots := make(chan struct{}, r.cfg.Concurrency)
	var backoff time.Duration
	for {
		// Take one free slot (waiting if need be), then up to
		// sqsReceiveMax-1 more that are free now.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1
		for n < sqsReceiveMax {
			select {
			case slots <- struct{}{}:
				n++
				continue
			default:
			}
			break
		}
		msgs, err := r.receive(ctx, n)
		for range n - len(msgs) {
			<-slots
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			backoff = min(max(2*backoff, time.Second), sqsMaxBackoff)
			r.b.cfg.Logger.Warn("SQS receive failed", "queue", r.cfg.QueueName, "err", err, "retry_in", backoff)
			if !sleep.For(ctx, backoff) {
				return
			}
			continue
		}
		backoff = 0
		for _, m := range msgs {
			wg.Go(func() {
				defer func() { <-slots }()
				r.handle(ctx, m)
			})
		}
	}
}

// receive long-polls the broker queue for up to n messages.
func (r *sqsRun) receive(ctx context.Context, n int) ([]types.Message, error) {
	ctx, cancel := context.WithTimeout(ctx, sqsCallTimeout+sqsReceiveWait*time.Second)
	defer cancel()
	out, err := r.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
		QueueUrl:              aws.String(r.queueURL),
		MaxNumberOfMessages:   int32(n),
		WaitTimeSeconds:       sqsReceiveWait,
		MessageAttributeNames: []string{SQSClientIDAttribute},
	})
	if err != nil {
		return nil, err
	}
	if len(out.Messages) > n { // a server that ignores MaxNumberOfMessages
		for _, m := range out.Messages[n:] {
			r.deleteMessage(ctx, m)
		}
		out.Messages = out.Messages[:n]
	}
	return out.Messages, nil
}

// handle serves one message. It runs to the end even if ctx ends (bounded
// by ClientTimeout and sqsCallTimeout), so that a client already matched
// gets its answer.
func (r *sqsRun) handle(ctx context.Context, m types.Message) {
	start := time.Now()
	b := r.b
	base := context.WithoutCancel(ctx)
	defer func() { b.stats.ObserveRequest(stats.EndpointSQS, time.Since(start)) }()
	defer r.deleteMessage(base, m)

	id, ok := sqsClientID(m.MessageAttributes)
	if !ok {
		b.sink.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Method: event.MethodSQS}, event.ClientBadRequest)
		b.cfg.Logger.Debug("SQS message without a valid ClientID attribute: ignored")
		return
	}
	if !b.limits.allowSQS() {
		// Dropped without a reply, which would cost two more SQS calls:
		// the client times out and tries again.
		b.sink.RequestRejected(event.EndpointSQS, event.ReasonRateLimited, netip.Addr{})
		return
	}
	callCtx, cancel := context.WithTimeout(base, sqsCallTimeout)
	out, err := r.client.CreateQueue(callCtx, &awssqs.CreateQueueInput{QueueName: aws.String(SQSClientQueuePrefix + id)})
	cancel()
	if err != nil {
		b.cfg.Logger.Warn("cannot create SQS client queue", "err", err)
		return
	}

	matchCtx, cancel := context.WithDeadline(base, start.Add(b.cfg.ClientTimeout))
	resp, err := b.relayedClientPoll(matchCtx, []byte(aws.ToString(m.Body)), event.MethodSQS)
	cancel()
	if err != nil {
		// Not even an error message could be encoded (cannot happen);
		// the client times out.
		b.cfg.Logger.Error("encode SQS client response", "err", err)
		return
	}
	callCtx, cancel = context.WithTimeout(base, sqsCallTimeout)
	_, err = r.client.SendMessage(callCtx, &awssqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(string(resp))})
	cancel()
	if err != nil {
		b.cfg.Logger.Warn("cannot send SQS client response", "err", err)
	}
}

// deleteMessage deletes a handled message from the broker queue.
func (r *sqsRun) deleteMessage(ctx context.Context, m types.Message) {
	ctx, cancel := context.WithTimeout(ctx, sqsCallTimeout)
	defer cancel()
	if _, err := r.client.DeleteMessage(ctx, &awssqs.DeleteMessageInput{QueueUrl: aws.String(r.queueURL), ReceiptHandle: m.ReceiptHandle}); err != nil {
		r.b.cfg.Logger.Warn("cannot delete SQS message", "err", err)
	}
}

// sqsClientID returns the message's ClientID attribute if it is a String
// of 1 to MaxSQSClientIDLen hex digits (so that it makes a valid queue
// name and is safe to log).
func sqsClientID(attrs map[string]types.MessageAttributeValue) (string, bool) {
	a, ok := attrs[SQSClientIDAttribute]
	if !ok || a.StringValue == nil || a.DataType == nil || !strings.HasPrefix(*a.DataType, "String") {
		return "", false
	}
	id := *a.StringValue
	if len(id) == 0 || len(id) > MaxSQSClientIDLen {
		return "", false
	}
	for i := range len(id) {
		c := id[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return "", false
		}
	}
	return id, true
}

// cleanupLoop deletes stale client queues every CleanupInterval until ctx
// ends.
func (r *sqsRun) cleanupLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.CleanupInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if n := r.cleanup(ctx); n > 0 {
			r.b.cfg.Logger.Info("deleted stale SQS client queues", "count", n)
		}
	}
}

// cleanup deletes the client queues last modified more than CleanupAge
// ago and returns how many it deleted.
func (r *sqsRun) cleanup(ctx context.Context) int {
	cutoff := time.Now().Add(-r.cfg.CleanupAge)
	var urls []string
	var next *string
	for range sqsMaxListPages {
		callCtx, cancel := context.WithTimeout(ctx, sqsCallTimeout)
		out, err := r.client.ListQueues(callCtx, &awssqs.ListQueuesInput{
			QueueNamePrefix: aws.String(SQSClientQueuePrefix),
			MaxResults:      aws.Int32(1000),
			NextToken:       next,
		})
		cancel()
		if err != nil {
			r.b.cfg.Logger.Warn("cannot list SQS client queues", "err", err)
			break // the next pass retries
		}
		urls = append(urls, out.QueueUrls...)
		if next = out.NextToken; next == nil {
			break
		}
	}
	deleted := 0
	for _, u := range urls {
		if ctx.Err() != nil {
			break
		}
		if name := u[strings.LastIndexByte(u, '/')+1:]; !strings.HasPrefix(name, SQSClientQueuePrefix) {
			continue
		}
		if r.deleteIfStale(ctx, u, cutoff) {
			deleted++
		}
	}
	return deleted
}

// deleteIfStale deletes the queue at url if it was last modified before
// cutoff, and reports whether it did.
func (r *sqsRun) deleteIfStale(ctx context.Context, url string, cutoff time.Time) bool {
	ctx, cancel := context.WithTimeout(ctx, sqsCallTimeout)
	defer cancel()
	out, err := r.client.GetQueueAttributes(ctx, &awssqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameLastModifiedTimestamp},
	})
	if err != nil {
		// A queue being deleted (which takes up to 60 s) is still listed.
		return false
	}
	secs, err := strconv.ParseInt(out.Attributes[string(types.QueueAttributeNameLastModifiedTimestamp)], 10, 64)
	if err != nil || !time.Unix(secs, 0).Before(cutoff) {
		return false
	}
	if _, err := r.client.DeleteQueue(ctx, &awssqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
		r.b.cfg.Logger.Debug("cannot delete stale SQS client queue", "err", err)
		return false
	}
	return true
}
