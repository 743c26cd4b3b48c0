// Package cluster makes several brokers act as one over NATS (core
// request/reply, queue groups and "no responders"; see docs/cluster.md).
//
// Each instance keeps its own waiting proxies. For every pool a client can
// be served from — the client's NAT class and its bridge — an instance
// holds a queue subscription exactly while it has an idle proxy there
// (want.<r|u>.<fingerprint>). A client poll that finds no local proxy
// becomes one request on that subject: NATS hands it to one instance that
// has a proxy, which matches it locally and replies with the proxy's
// answer; with nobody subscribed NATS answers "no responders" at once. The
// instance whose proxy took an offer listens on the session's subject
// (answer.<hex sid>) until the answer arrives, so that an answer posted to
// any other instance is forwarded to it.
//
// Every message from NATS is treated as if it came from the network: a
// client poll is decoded by the messages package and its offer checked by
// Config.CheckOffer (the broker's check of a client's offer), an answer
// (forwarded or in a reply) is checked by Config.CheckAnswer, bodies are at
// most messages.MaxBodySize, reply subjects must be inboxes and a budget is
// capped at Config.MaxBudget.
package cluster

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/messages"
)

// Subjects and headers. The prefix keeps the cluster's subjects apart from
// anything else on a shared NATS account.
const (
	subjectPrefix = "flurry.broker."
	queueGroup    = "flurry-broker"
	budgetHeader  = "Flurry-Budget-Ms"
)

// Limits and timings.
const (
	// replyMargin is kept from the client's remaining budget for the reply
	// to travel back, so that the owner answers before the requester's
	// client gives up.
	replyMargin = 100 * time.Millisecond
	// minBudget is the least remaining budget worth a cross-instance try.
	minBudget = 2 * replyMargin
	// maxBudgetDigits bounds the budget header (whole milliseconds).
	maxBudgetDigits = 6
	// maxReplySubject bounds a request's reply subject.
	maxReplySubject = 256
	// inboxPrefix starts every reply subject nats.go makes (the cluster
	// sets no custom inbox prefix).
	inboxPrefix = "_INBOX."
	// maxAttempts bounds the requests per client poll: a request can reach
	// an instance whose last proxy was taken a moment before (it then
	// replies "no proxies" and the next request goes elsewhere).
	maxAttempts = 3
	// maxServing bounds the requests from other instances served at once.
	maxServing = 4096
	// forwardTimeout bounds a forwarded answer's round trip.
	forwardTimeout = 2 * time.Second
	// forwardRetries and forwardRetryWait cover the moment between a match
	// and the owner's subscription to the session's subject reaching the
	// NATS server the forwarder is connected to.
	forwardRetries   = 3
	forwardRetryWait = 50 * time.Millisecond
	// MaxInstanceLength bounds Config.Instance.
	MaxInstanceLength = 64
)

// Errors of Rendezvous, besides the matcher's ErrNoProxies and ErrTimedOut.
var (
	// errInvalidConfig: Config.Instance is empty, too long or has
	// characters outside [A-Za-z0-9._-], Config.URL is empty or does not
	// parse, Config.MaxBudget is not positive, or a check is missing.
	errInvalidConfig = errors.New("invalid cluster config")
)

// Local is the instance's own broker, as the cluster sees it.
type Local interface {
	// Serve matches a client poll taken from another instance with a local
	// proxy and waits for the answer until ctx ends. It returns the answer,
	// or matcher.ErrNoProxies or matcher.ErrTimedOut. It records what the
	// owner of the proxy records (strikes), not the client's poll.
	Serve(ctx context.Context, req messages.ClientPollRequest) (string, error)
	// Answer delivers an answer that another instance received for one of
	// this instance's sessions, and reports whether a client still waited.
	Answer(sid, sdp string) bool
	// Available reports the bridges a local proxy waits for, by client NAT
	// class (matcher.Matcher.Available).
	Available() (restricted, unrestricted uint64)
}

// Config configures a Cluster.
type Config struct {
	// URL is the NATS server URL or comma-separated URLs. Required.
	URL string
	// CredsFile is a NATS credentials file (JWT and NKey seed); empty for
	// none.
	CredsFile string
	// NKeyFile is a file holding a user NKey seed (the server lists the
	// public key); empty for none. Not with CredsFile.
	NKeyFile string
	// TLSCAFile is a PEM file of the CAs that sign the NATS servers'
	// certificates; it makes the link TLS whatever the URLs' scheme. Empty:
	// TLS only with tls:// or wss:// URLs, verified with the system's CAs.
	TLSCAFile string
	// MaxBudget caps the time a client poll from another instance may
	// hold a local proxy (the broker's client timeout), whatever the
	// request claims. Required.
	MaxBudget time.Duration
	// CheckOffer checks a client poll's offer as the broker checks one
	// that arrives over HTTP, before it goes to a local proxy. Required.
	CheckOffer func(offer string) error
	// CheckAnswer checks a proxy's answer as the broker checks one posted
	// to it, before it goes to a client. Required.
	CheckAnswer func(answer string) error
	// Instance names this broker in metrics, logs and the NATS connection.
	Instance string
	// Bridges are the hex fingerprints of the bridge list, by index. Every
	// instance must have the same bridges (the order may differ).
	Bridges []string
	// Local is the instance's broker. Required.
	Local Local
	// Registry receives the cluster's metrics; nil: not registered.
	Registry prometheus.Registerer
	// Logger receives the cluster's logs; nil discards them.
	Logger *slog.Logger
}

// Cluster is one broker's link to the others. Create it with Start.
type Cluster struct {
	cfg     Config
	log     *slog.Logger
	nc      *nats.Conn
	m       *metrics
	changed chan struct{} // capacity 1: availability may have changed
	serving chan struct{} // semaphore of requests being served
	done    chan struct{} // closed by Close
	wg      sync.WaitGroup

	pools atomic.Int64 // see Pools

	mu   sync.Mutex                    // guards subs
	subs map[string]*nats.Subscription // want subjects subscribed now
}

// ValidInstance reports whether s can name an instance.
func ValidInstance(s string) bool {
	if s == "" || len(s) > MaxInstanceLength {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// Start connects to NATS and starts following Local. It does not wait for
// the server: while it is unreachable the cluster is down (Healthy false,
// clients are matched locally only) and it keeps trying.
func Start(cfg Config) (*Cluster, error) {
	if !ValidInstance(cfg.Instance) {
		return nil, fmt.Errorf("%w: instance name %q", errInvalidConfig, cfg.Instance)
	}
	if cfg.URL == "" {
		return nil, fmt.Errorf("%w: no NATS URL", errInvalidConfig)
	}
	if _, _, err := cfg.Exposure(); err != nil {
		return nil, err
	}
	switch {
	case cfg.MaxBudget <= 0:
		return nil, fmt.Errorf("%w: budget cap %v", errInvalidConfig, cfg.MaxBudget)
	case cfg.CheckOffer == nil || cfg.CheckAnswer == nil:
		return nil, fmt.Errorf("%w: no offer or answer check", errInvalidConfig)
	case cfg.CredsFile != "" && cfg.NKeyFile != "":
		return nil, fmt.Errorf("%w: both a credentials file and an NKey seed file", errInvalidConfig)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With("instance", cfg.Instance)
	c := &Cluster{
		cfg:     cfg,
		log:     log,
		changed: make(chan struct{}, 1),
		serving: make(chan struct{}, maxServing),
		done:    make(chan struct{}),
		subs:    make(map[string]*nats.Subscription),
	}
	opts := []nats.Option{
		nats.Name("flurry-broker " + cfg.Instance),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(100*time.Millisecond, 100*time.Millisecond),
		// Nothing is buffered while the link is down: a request then
		// fails at once and the client is answered from local state.
		nats.ReconnectBufSize(-1),
		nats.PingInterval(2 * time.Second),
		nats.MaxPingsOutstanding(2),
		nats.Timeout(2 * time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			c.pools.Store(0) // until the server confirms them again
			log.Warn("cluster link down: matching local proxies only", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("cluster link up", "server", nc.ConnectedUrlRedacted())
			c.Changed() // confirm the subscriptions nats.go sent again
		}),
		nats.ConnectHandler(func(nc *nats.Conn) {
			log.Info("cluster link up", "server", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			log.Warn("cluster", "err", err)
		}),
	}
	if cfg.CredsFile != "" {
		opts = append(opts, nats.UserCredentials(cfg.CredsFile))
	}
	if cfg.NKeyFile != "" {
		o, err := nats.NkeyOptionFromSeed(cfg.NKeyFile)
		if err != nil {
			return nil, fmt.Errorf("cluster: NKey seed: %w", err)
		}
		opts = append(opts, o)
	}
	if cfg.TLSCAFile != "" {
		opts = append(opts, nats.RootCAs(cfg.TLSCAFile))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.nc = nc
	c.m = newMetrics(cfg.Instance, c.Healthy, c.Pools)
	if cfg.Registry != nil {
		if err := c.m.register(cfg.Registry); err != nil {
			nc.Close()
			return nil, fmt.Errorf("cluster: metrics: %w", err)
		}
	}
	c.wg.Go(c.follow)
	c.Changed()
	return c, nil
}

// Healthy reports whether the link to NATS is up.
func (c *Cluster) Healthy() bool { return c.nc.Status() == nats.CONNECTED }

// Server returns the URL of the NATS server the link is up to ("" while
// it is down).
func (c *Cluster) Server() string { return c.nc.ConnectedUrlRedacted() }

// Changed tells the cluster that the local proxies' bridges may have
// changed. It never blocks (matcher.Hooks.Changed).
func (c *Cluster) Changed() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

// Close stops serving other instances, waits for the requests being served
// and closes the link. Call it once the local matcher is closed.
func (c *Cluster) Close() {
	close(c.done)
	c.wg.Wait()
	c.nc.Close()
}

// follow keeps the want subscriptions in step with Local.Available.
func (c *Cluster) follow() {
	for {
		select {
		case <-c.done:
			c.mu.Lock()
			for subj, s := range c.subs {
				_ = s.Unsubscribe()
				delete(c.subs, subj)
			}
			c.mu.Unlock()
			c.pools.Store(0)
			return
		case <-c.changed:
		}
		r, u := c.cfg.Local.Available()
		want := make(map[string]bool)
		for i, fp := range c.cfg.Bridges {
			bit := uint64(1) << uint(i)
			if r&bit != 0 {
				want[wantSubject(matcher.NATRestricted, fp)] = true
			}
			if u&bit != 0 {
				want[wantSubject(matcher.NATUnrestricted, fp)] = true
			}
		}
		c.mu.Lock()
		for subj, s := range c.subs {
			if !want[subj] {
				_ = s.Unsubscribe()
				delete(c.subs, subj)
			}
		}
		for subj := range want {
			if c.subs[subj] != nil {
				continue
			}
			s, err := c.nc.QueueSubscribe(subj, queueGroup, c.take)
			if err != nil {
				c.log.Warn("cluster: cannot subscribe", "err", err)
				continue
			}
			c.subs[subj] = s
		}
		n := len(c.subs)
		c.mu.Unlock()
		// One round trip per change of the pools (not per poll or match):
		// once it returns the server routes requests here.
		if err := c.nc.FlushTimeout(time.Second); err == nil {
			c.pools.Store(int64(n))
		}
	}
}

// Pools returns how many pools this instance took client polls from
// other instances for when NATS last confirmed its subscriptions.
func (c *Cluster) Pools() int { return int(c.pools.Load()) }

// wantSubject is the subject of client polls with NAT nat for the bridge
// with hex fingerprint fp.
func wantSubject(nat matcher.NAT, fp string) string {
	class := "r" // restricted and unknown NAT need an unrestricted proxy
	if nat == matcher.NATUnrestricted {
		class = "u"
	}
	return subjectPrefix + "want." + class + "." + fp
}

// answerSubject is the subject of session sid's answer. Hex keeps the
// subject a single token whatever the (validated) sid holds.
func answerSubject(sid string) string {
	return subjectPrefix + "answer." + hex.EncodeToString([]byte(sid))
}

// take serves a client poll from another instance, in a goroutine of its
// own: it waits for the proxy's answer.
func (c *Cluster) take(msg *nats.Msg) {
	select {
	case c.serving <- struct{}{}:
	default:
		c.m.served.WithLabelValues(resultBusy).Inc()
		c.reply(msg, messages.ClientPollResponse{Error: messages.StrNoProxies})
		return
	}
	select {
	case <-c.done:
		<-c.serving
		c.reply(msg, messages.ClientPollResponse{Error: messages.StrNoProxies})
		return
	default:
	}
	c.wg.Go(func() {
		defer func() { <-c.serving }()
		c.serve(msg)
	})
}

func (c *Cluster) serve(msg *nats.Msg) {
	req, budget, err := decodeRequest(msg, c.cfg.MaxBudget, c.cfg.CheckOffer)
	if err != nil {
		c.m.served.WithLabelValues(resultBad).Inc()
		c.log.Debug("cluster: bad request from another instance", "err", err)
		return // the requester times out; nothing sane to tell it
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget-replyMargin)
	defer cancel()
	answer, err := c.cfg.Local.Serve(ctx, req)
	resp := messages.ClientPollResponse{Answer: answer}
	switch {
	case err == nil:
		c.m.served.WithLabelValues(resultMatched).Inc()
	case errors.Is(err, matcher.ErrTimedOut):
		c.m.served.WithLabelValues(resultTimedOut).Inc()
		resp.Error = messages.StrTimedOut
	default:
		c.m.served.WithLabelValues(resultNoProxies).Inc()
		resp.Error = messages.StrNoProxies
	}
	c.reply(msg, resp)
}

func (c *Cluster) reply(msg *nats.Msg, resp messages.ClientPollResponse) {
	body, err := resp.Encode()
	if err != nil {
		c.log.Error("cluster: encode reply", "err", err)
		return
	}
	if err := msg.Respond(body); err != nil {
		c.log.Debug("cluster: reply not sent", "err", err)
	}
}

// decodeRequest validates a client poll from another instance as if it
// came from the network: an inbox to reply to, a budget (capped at
// maxBudget), a body of at most messages.MaxBodySize that decodes, and an
// offer that checkOffer accepts.
func decodeRequest(msg *nats.Msg, maxBudget time.Duration, checkOffer func(string) error) (messages.ClientPollRequest, time.Duration, error) {
	if !validReply(msg.Reply) {
		return messages.ClientPollRequest{}, 0, errors.New("reply subject is not an inbox")
	}
	budget, err := parseBudget(msg.Header.Get(budgetHeader), maxBudget)
	if err != nil {
		return messages.ClientPollRequest{}, 0, err
	}
	if len(msg.Data) > messages.MaxBodySize {
		return messages.ClientPollRequest{}, 0, messages.ErrTooLarge
	}
	req, err := messages.DecodeClientPollRequest(msg.Data)
	if err != nil {
		return messages.ClientPollRequest{}, 0, err
	}
	if err := checkOffer(req.Offer); err != nil {
		return messages.ClientPollRequest{}, 0, err
	}
	return req, budget, nil
}

// validReply reports whether s can be a reply subject: an inbox of
// nats.go's (_INBOX.<tokens>), at most maxReplySubject bytes of printable
// ASCII without wildcards. Anything else would make this instance publish
// where a stranger chose.
func validReply(s string) bool {
	if len(s) <= len(inboxPrefix) || len(s) > maxReplySubject || !strings.HasPrefix(s, inboxPrefix) {
		return false
	}
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c > '~' || c == '*' || c == '>' {
			return false
		}
	}
	return true
}

// parseBudget parses the budget header: whole milliseconds, at least
// minBudget, capped at maxBudget (an instance with a longer client timeout
// gets this instance's, not an error).
func parseBudget(s string, maxBudget time.Duration) (time.Duration, error) {
	if len(s) > maxBudgetDigits {
		return 0, errors.New("budget out of range")
	}
	ms, err := strconv.Atoi(s)
	if err != nil {
		return 0, errors.New("malformed budget")
	}
	d := time.Duration(ms) * time.Millisecond
	if d < minBudget {
		return 0, errors.New("budget out of range")
	}
	return min(d, maxBudget), nil
}

// Rendezvous offers a client poll that found no local proxy to the other
// instances, for the bridge with index bridge, until ctx ends. It returns
// the answer, or matcher.ErrNoProxies (no proxy anywhere, or the cluster
// link is down) or matcher.ErrTimedOut.
func (c *Cluster) Rendezvous(ctx context.Context, req messages.ClientPollRequest, nat matcher.NAT, bridge int) (string, error) {
	if bridge < 0 || bridge >= len(c.cfg.Bridges) {
		return "", matcher.ErrBadBridge
	}
	if !c.Healthy() {
		c.m.requests.WithLabelValues(resultUnavailable).Inc()
		return "", matcher.ErrNoProxies
	}
	body, err := req.Encode()
	if err != nil {
		return "", fmt.Errorf("cluster: encode request: %w", err)
	}
	subj := wantSubject(nat, c.cfg.Bridges[bridge])
	start := time.Now()
	for range maxAttempts {
		deadline, ok := ctx.Deadline()
		if !ok {
			deadline = time.Now().Add(c.cfg.MaxBudget)
		}
		budget := time.Until(deadline)
		if budget < minBudget {
			break
		}
		msg := nats.NewMsg(subj)
		msg.Data = body
		msg.Header.Set(budgetHeader, strconv.FormatInt(min(budget, c.cfg.MaxBudget).Milliseconds(), 10))
		reply, err := c.nc.RequestMsgWithContext(ctx, msg)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			c.m.requests.WithLabelValues(resultNoProxies).Inc()
			return "", matcher.ErrNoProxies
		case err != nil && ctx.Err() != nil:
			c.m.requests.WithLabelValues(resultTimedOut).Inc()
			return "", matcher.ErrTimedOut
		case err != nil:
			// The link broke mid-request.
			c.m.requests.WithLabelValues(resultUnavailable).Inc()
			return "", matcher.ErrNoProxies
		}
		resp, err := decodeReply(reply.Data, c.cfg.CheckAnswer)
		switch {
		case err != nil:
			c.m.requests.WithLabelValues(resultBad).Inc()
			c.log.Debug("cluster: bad reply from another instance", "err", err)
			return "", matcher.ErrNoProxies
		case resp.Answer != "":
			c.m.requests.WithLabelValues(resultMatched).Inc()
			c.m.latency.Observe(time.Since(start).Seconds())
			return resp.Answer, nil
		case resp.Error == messages.StrTimedOut:
			c.m.requests.WithLabelValues(resultTimedOut).Inc()
			return "", matcher.ErrTimedOut
		}
		// The instance's proxy was taken meanwhile: ask again.
		c.m.requests.WithLabelValues(resultRetry).Inc()
	}
	if ctx.Err() != nil {
		c.m.requests.WithLabelValues(resultTimedOut).Inc()
		return "", matcher.ErrTimedOut
	}
	c.m.requests.WithLabelValues(resultNoProxies).Inc()
	return "", matcher.ErrNoProxies
}

// decodeReply validates another instance's reply to a client poll as if it
// came from the network: at most messages.MaxBodySize, decoded by the
// messages package, and an answer that checkAnswer accepts.
func decodeReply(data []byte, checkAnswer func(string) error) (messages.ClientPollResponse, error) {
	if len(data) > messages.MaxBodySize {
		return messages.ClientPollResponse{}, messages.ErrTooLarge
	}
	resp, err := messages.DecodeClientPollResponse(data)
	if err != nil {
		return messages.ClientPollResponse{}, err
	}
	if resp.Answer != "" {
		if err := checkAnswer(resp.Answer); err != nil {
			return messages.ClientPollResponse{}, err
		}
	}
	return resp, nil
}

// Matched makes this instance listen for session sid's answer on behalf of
// the local client or other instance waiting for it, until release is
// called (matcher.Hooks.Matched).
func (c *Cluster) Matched(sid string) (release func()) {
	s, err := c.nc.Subscribe(answerSubject(sid), c.answered)
	if err != nil {
		// The link is down: answers posted here still arrive.
		return func() {}
	}
	return func() { _ = s.Unsubscribe() }
}

// answered delivers an answer another instance forwarded, once checked as
// if it came from the network: at most messages.MaxBodySize, decoded by the
// messages package, on its own session's subject, and accepted by
// Config.CheckAnswer.
func (c *Cluster) answered(msg *nats.Msg) {
	if !validReply(msg.Reply) {
		return
	}
	status := messages.StatusClientGone
	var (
		req messages.ProxyAnswerRequest
		err error
	)
	if len(msg.Data) > messages.MaxBodySize {
		err = messages.ErrTooLarge
	} else {
		req, err = messages.DecodeProxyAnswerRequest(msg.Data)
	}
	switch {
	case err != nil:
		c.log.Debug("cluster: bad forwarded answer", "err", err)
	case answerSubject(req.Sid) != msg.Subject:
		c.log.Debug("cluster: forwarded answer on another session's subject")
	case c.cfg.CheckAnswer(req.Answer) != nil:
		c.log.Debug("cluster: forwarded answer refused as POST /answer refuses it")
	case c.cfg.Local.Answer(req.Sid, req.Answer):
		status = messages.StatusSuccess
	}
	body, err := messages.ProxyAnswerResponse{Status: status}.Encode()
	if err == nil {
		_ = msg.Respond(body)
	}
}

// ForwardAnswer hands an answer for a session this instance does not hold
// to the instance that does, and reports whether a client still waited.
func (c *Cluster) ForwardAnswer(ctx context.Context, sid, sdp string) bool {
	if !c.Healthy() {
		c.m.forwarded.WithLabelValues(resultUnavailable).Inc()
		return false
	}
	body, err := messages.ProxyAnswerRequest{Sid: sid, Answer: sdp}.Encode()
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, forwardTimeout)
	defer cancel()
	for i := range forwardRetries {
		reply, err := c.nc.RequestWithContext(ctx, answerSubject(sid), body)
		if errors.Is(err, nats.ErrNoResponders) && i+1 < forwardRetries {
			select {
			case <-time.After(forwardRetryWait):
				continue
			case <-ctx.Done():
			}
		}
		if err != nil || ctx.Err() != nil {
			break
		}
		resp, err := messages.DecodeProxyAnswerResponse(reply.Data)
		if err == nil && resp.Status == messages.StatusSuccess {
			c.m.forwarded.WithLabelValues(resultDelivered).Inc()
			return true
		}
		break
	}
	c.m.forwarded.WithLabelValues(resultGone).Inc()
	return false
}
