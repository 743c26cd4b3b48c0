package sqs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/flurrypt/flurry/client/internal/rendezvous"
	"github.com/flurrypt/flurry/common/sqscreds"
	"github.com/flurrypt/flurry/messages"
)

// Wire constants shared with the broker (Snowflake's names).
const (
	// ClientQueuePrefix starts the name of every client's reply queue;
	// the ClientID follows.
	ClientQueuePrefix = "snowflake-client-"
	// ClientIDAttribute is the message attribute (type String) carrying
	// the ClientID.
	ClientIDAttribute = "ClientID"
)

// Defaults and limits.
const (
	// DefaultTimeout bounds one exchange when Config.Timeout is zero: the
	// broker's 5 s matching budget, its queue creation and the SQS round
	// trips, with room to spare.
	DefaultTimeout = 30 * time.Second
	// DefaultPollInterval is the first pause between GetQueueUrl attempts
	// and between empty receives when Config.PollInterval is zero
	// (Snowflake's 1 s); the pause grows by half of it per attempt, up to
	// four times it.
	DefaultPollInterval = time.Second
	// MaxRequestSize is the longest poll request Exchange sends (the
	// broker's limit on every request body).
	MaxRequestSize = messages.MaxBodySize
	// MaxResponseSize is the longest reply Exchange accepts (as for HTTP).
	MaxResponseSize = rendezvous.MaxResponseSize

	// maxWaitSeconds is the longest ReceiveMessage long poll: SQS allows
	// 20 s (Snowflake's choice), but the client's broker transport gives
	// up on a response whose headers take more than 15 s.
	maxWaitSeconds = 10
	// cleanupTimeout bounds deleting the client queue after an exchange.
	cleanupTimeout = 3 * time.Second
	// endpointRegion is the region used with a custom endpoint when the
	// queue URL names none.
	endpointRegion = "us-east-1"
)

// queueHost is an SQS queue URL's host; its group is the region
// (Snowflake's pattern).
var queueHost = regexp.MustCompile(`^sqs\.([\w-]+)\.amazonaws\.com$`)

// Config configures an SQS rendezvous. QueueURL and Credentials are
// required.
type Config struct {
	// QueueURL is the broker's queue (sqsqueue=), e.g.
	// https://sqs.us-east-1.amazonaws.com/893902434899/snowflake-broker.
	QueueURL string
	// Credentials is the sqscreds= value (see package common/sqscreds).
	Credentials string

	// Endpoint, if set, is where the SQS API requests go instead of the
	// region's AWS endpoint, e.g. http://127.0.0.1:4100 (an SQS-compatible
	// server, in tests). QueueURL is then any absolute http(s) URL.
	Endpoint string

	// Transport carries the requests; nil means a transport of its own
	// (rendezvous.NewTransport: no environment proxy).
	Transport http.RoundTripper

	// Timeout bounds each exchange; zero means DefaultTimeout.
	Timeout time.Duration
	// PollInterval paces GetQueueUrl attempts and empty receives; zero
	// means DefaultPollInterval.
	PollInterval time.Duration

	// Logger receives debug logs; nil discards them. It never sees the
	// credentials.
	Logger *slog.Logger
}

// Rendezvous is the SQS rendezvous method. It is safe for concurrent use.
type Rendezvous struct {
	client    *awssqs.Client
	transport http.RoundTripper
	queueURL  string
	timeout   time.Duration
	poll      time.Duration
	log       *slog.Logger
}

// ParseRegion returns the region of an SQS queue URL
// (https://sqs.<region>.amazonaws.com/...).
func ParseRegion(queueURL string) (string, error) {
	u, err := url.Parse(queueURL)
	if err != nil || u.Scheme != "https" || u.User != nil {
		return "", fmt.Errorf("%w: want https://sqs.<region>.amazonaws.com/<account>/<queue>", ErrQueueURL)
	}
	m := queueHost.FindStringSubmatch(u.Hostname())
	if m == nil {
		return "", fmt.Errorf("%w: host is not sqs.<region>.amazonaws.com", ErrQueueURL)
	}
	return m[1], nil
}

// New checks cfg and returns an SQS rendezvous. It makes no request.
func New(cfg Config) (*Rendezvous, error) {
	var region string
	if cfg.Endpoint == "" {
		var err error
		if region, err = ParseRegion(cfg.QueueURL); err != nil {
			return nil, err
		}
	} else {
		e, err := url.Parse(cfg.Endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, ErrEndpoint
		}
		u, err := url.Parse(cfg.QueueURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("%w: not an absolute http(s) URL", ErrQueueURL)
		}
		region = endpointRegion
		if m := queueHost.FindStringSubmatch(u.Hostname()); m != nil {
			region = m[1]
		}
	}
	creds, err := sqscreds.Decode(cfg.Credentials)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCredentials, err)
	}
	if cfg.Timeout < 0 || cfg.PollInterval < 0 {
		return nil, fmt.Errorf("%w: negative timeout", ErrQueueURL)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Transport == nil {
		if cfg.Transport, err = rendezvous.NewTransport(rendezvous.TransportConfig{}); err != nil {
			return nil, err
		}
	}
	static := aws.Credentials{AccessKeyID: creds.AccessKeyID, SecretAccessKey: creds.SecretKey, Source: "sqscreds"}
	opts := awssqs.Options{
		Region: region,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return static, nil
		}),
		HTTPClient: &http.Client{Transport: cfg.Transport},
	}
	if cfg.Endpoint != "" {
		opts.BaseEndpoint = aws.String(cfg.Endpoint)
	}
	return &Rendezvous{
		client:    awssqs.New(opts),
		transport: cfg.Transport,
		queueURL:  cfg.QueueURL,
		timeout:   cfg.Timeout,
		poll:      cfg.PollInterval,
		log:       cfg.Logger,
	}, nil
}

// CloseIdleConnections closes the transport's idle connections, if it has
// a CloseIdleConnections method.
func (r *Rendezvous) CloseIdleConnections() {
	if c, ok := r.transport.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Exchange sends an encoded poll request through the broker's queue and
// returns the broker's encoded reply from the client's own queue, which it
// then deletes. It returns an error matching ErrNoAnswer if the reply does
// not come within Config.Timeout (or before ctx ends).
func (r *Rendezvous) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	if len(request) > MaxRequestSize {
		return nil, ErrRequestTooLarge
	}
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	start := time.Now()
	id, err := newClientID()
	if err != nil {
		return nil, err
	}
	name := ClientQueuePrefix + id
	var queueURL string
	sent := false // the broker may have the request: clean up after it
	defer func() {
		if sent {
			r.deleteQueue(ctx, name, queueURL)
		}
	}()
	_, err = r.client.SendMessage(ctx, &awssqs.SendMessageInput{
		QueueUrl:    aws.String(r.queueURL),
		MessageBody: aws.String(string(request)),
		MessageAttributes: map[string]types.MessageAttributeValue{
			ClientIDAttribute: {DataType: aws.String("String"), StringValue: aws.String(id)},
		},
	})
	if err != nil {
		if ctx.Err() != nil {
			// Cut short, perhaps after SQS took the message.
			sent = true
			return nil, noAnswer(ctx.Err(), start)
		}
		return nil, fmt.Errorf("send poll request to SQS: %w", err)
	}
	sent = true
	r.log.Debug("SQS rendezvous: poll request sent")

	// The broker creates the client queue when it takes the request.
	for attempt := 0; queueURL == ""; attempt++ {
		if err := r.pause(ctx, attempt); err != nil {
			return nil, noAnswer(err, start)
		}
		out, err := r.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
		var missing *types.QueueDoesNotExist
		switch {
		case err == nil:
			queueURL = aws.ToString(out.QueueUrl)
		case ctx.Err() != nil:
			return nil, noAnswer(ctx.Err(), start)
		case !errors.As(err, &missing):
			return nil, fmt.Errorf("look up SQS client queue: %w", err)
		}
	}
	r.log.Debug("SQS rendezvous: client queue found")

	for attempt := 0; ; attempt++ {
		out, err := r.client.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl:            aws.String(queueURL),
			MaxNumberOfMessages: 1,
			WaitTimeSeconds:     waitSeconds(ctx),
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil, noAnswer(ctx.Err(), start)
			}
			return nil, fmt.Errorf("receive answer from SQS: %w", err)
		}
		if len(out.Messages) > 0 && out.Messages[0].Body != nil {
			body := *out.Messages[0].Body
			if len(body) > MaxResponseSize {
				return nil, ErrResponseTooLarge
			}
			r.log.Debug("SQS rendezvous: answer received")
			return []byte(body), nil
		}
		if err := r.pause(ctx, attempt); err != nil {
			return nil, noAnswer(err, start)
		}
	}
}

// pause waits before the attempt-th retry: PollInterval × (1 + attempt/2),
// at most 4 × PollInterval (Snowflake's growth).
func (r *Rendezvous) pause(ctx context.Context, attempt int) error {
	d := r.poll + r.poll*time.Duration(attempt)/2
	d = min(d, 4*r.poll)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// deleteQueue deletes the client queue, looking its URL up first if the
// exchange ended before it was found (the broker may have created it
// since). Failures are only logged: the broker deletes stale client queues.
func (r *Rendezvous) deleteQueue(ctx context.Context, name, queueURL string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if queueURL == "" {
		out, err := r.client.GetQueueUrl(ctx, &awssqs.GetQueueUrlInput{QueueName: aws.String(name)})
		if err != nil {
			return // never created, or we cannot tell: the broker cleans up
		}
		queueURL = aws.ToString(out.QueueUrl)
	}
	if _, err := r.client.DeleteQueue(ctx, &awssqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)}); err != nil {
		r.log.Debug("SQS rendezvous: cannot delete client queue; the broker will", "err", err)
	}
}

// waitSeconds is the long-poll time for a receive: maxWaitSeconds, but not
// past ctx's deadline.
func waitSeconds(ctx context.Context) int32 {
	deadline, ok := ctx.Deadline()
	if !ok {
		return maxWaitSeconds
	}
	s := int32(time.Until(deadline) / time.Second)
	return max(0, min(s, maxWaitSeconds))
}

// noAnswer wraps the context error that ended an exchange.
func noAnswer(err error, start time.Time) error {
	return fmt.Errorf("%w after %v: %w", ErrNoAnswer, time.Since(start).Round(time.Millisecond), err)
}

// newClientID returns 8 random bytes in lowercase hex (Snowflake's
// ClientID).
func newClientID() (string, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("client id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
