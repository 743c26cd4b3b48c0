package brokerload

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/common/relaypattern"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/procstat"
	"github.com/flurrypt/flurry/messages"
)

// Defaults and limits of BrokerConfig.
const (
	DefaultBrokerProxies = 100
	DefaultBrokerClients = 10
	DefaultStepDuration  = 10 * time.Second
	DefaultIdleSettle    = 3 * time.Second
	DefaultProxyNATMix   = "unrestricted=2,restricted=1,unknown=1"
	DefaultProxyTypeMix  = "standalone=5,webext=3,badge=1,iptproxy=1"
	DefaultClientNATMix  = "unrestricted=1,restricted=1,unknown=1"
)

// BrokerConfig configures RunBroker. The zero value (with URL set) runs
// 100 proxies and one 10 s step of 10 back-to-back clients.
type BrokerConfig struct {
	// URL is the broker's base URL, e.g. http://127.0.0.1:8080 (paths
	// /proxy, /client and /answer are appended). Required.
	URL string
	// CheckURLs are Prometheus pages of brokers (each instance of a
	// cluster behind URL, for example) checked once the load has stopped:
	// what each still holds is reported (BrokerResult.Leftovers).
	CheckURLs []string
	// ClientURL, if set, is where the clients send their offers instead
	// of URL (another instance of a broker cluster: every match then
	// crosses instances). Proxies poll and answer at URL.
	ClientURL string

	// Proxies is the number of simulated proxies long-polling during the
	// client steps. Default DefaultBrokerProxies; negative means none
	// (every offer is then denied). Proxy i reports (i mod 4)*8 clients,
	// so that a broker ordering proxies by load has something to order.
	Proxies int
	// Clients lists the client concurrency of each step, run one after
	// the other for StepDuration each. Default {DefaultBrokerClients}.
	Clients []int
	// Rate, if positive, is the total offers per second the clients of a
	// step send (each step's Clients is then the most in flight at once;
	// offers that find every client busy are counted as Missed). Zero
	// means back to back.
	Rate float64
	// StepDuration is how long each client step sends offers (in-flight
	// offers then finish). Default DefaultStepDuration.
	StepDuration time.Duration

	// IdlePolls, if not empty, runs an idle phase first: for each K in
	// turn (ascending), hold K proxy polls open at once, with no clients,
	// and record the broker's RSS. Needs PID for memory figures.
	IdlePolls []int
	// IdleSettle is how long each idle step waits, once its polls are
	// waiting, before sampling memory. Default DefaultIdleSettle.
	IdleSettle time.Duration
	// IdleWindow, if positive, samples memory every 200 ms for this long
	// after the settle, instead of five samples over a second, and records
	// the largest RSS beside the median. Idle pollers poll again as soon as
	// their poll ends, so a window of two proxy holds covers the broker's
	// steady state, the waves of returning polls included.
	IdleWindow time.Duration
	// IdleBurst starts each idle step's new polls all at once, as when
	// many proxies return together (after a network outage or a broker
	// restart), instead of in batches of idleBatch that each wait for
	// the previous one.
	IdleBurst bool

	// ProxyNAT, ProxyTypes and ClientNAT are the mixes of simulated peers.
	// Defaults DefaultProxyNATMix, DefaultProxyTypeMix, DefaultClientNATMix.
	ProxyNAT, ProxyTypes, ClientNAT Mix
	// RelayPattern is the AcceptedRelayPattern the proxies send. It must
	// be acceptable to the broker (a superset of Snowflake's
	// -allowed-relay-pattern; for Flurry's broker, a pattern matching a
	// bridge's relay host). The default "" accepts every relay.
	RelayPattern string
	// Fingerprint is the bridge fingerprint clients ask for. Default
	// messages.DefaultBridgeFingerprint.
	Fingerprint string

	// PID, if positive, is the broker's process ID, for RSS and CPU.
	PID int
	// RequestTimeout bounds every HTTP request. Default
	// DefaultRequestTimeout (a poll is held about 10 s).
	RequestTimeout time.Duration
	// Insecure skips TLS certificate verification (self-signed test
	// brokers).
	Insecure bool
	// AllowNonLoopback allows a broker that is not on a loopback address.
	AllowNonLoopback bool

	// Progress, if not nil, receives a progress line every
	// ProgressInterval (default DefaultProgressInterval).
	Progress         io.Writer
	ProgressInterval time.Duration
}

// BrokerResult is what RunBroker measured.
type BrokerResult struct {
	URL          string       `json:"url"`
	ClientURL    string       `json:"client_url,omitempty"`
	Proxies      int          `json:"proxies"`
	ProxyNAT     string       `json:"proxy_nat_mix"`
	ProxyTypes   string       `json:"proxy_type_mix"`
	ClientNAT    string       `json:"client_nat_mix"`
	RelayPattern string       `json:"relay_pattern"`
	Rate         float64      `json:"rate_per_sec,omitempty"`
	StepSeconds  float64      `json:"step_seconds"`
	BrokerPID    int          `json:"broker_pid,omitempty"`
	Idle         *IdleResult  `json:"idle,omitempty"`
	Steps        []BrokerStep `json:"steps"`
	Proxy        ProxyCounts  `json:"proxy"`
	ErrorSamples []string     `json:"error_samples,omitempty"`
	// Leftovers: what each of BrokerConfig.CheckURLs held once the load
	// stopped.
	Leftovers []BrokerLeftover `json:"leftovers,omitempty"`
}

// BrokerStep is one client-concurrency step. Offers = Matches + Denials +
// Timeouts + Errors.
type BrokerStep struct {
	Clients        int     `json:"clients"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`
	Offers         int64   `json:"offers"`
	Matches        int64   `json:"matches"`
	Denials        int64   `json:"denials"`  // "no snowflake proxies currently available"
	Timeouts       int64   `json:"timeouts"` // "timed out waiting for answer!"
	Errors         int64   `json:"errors"`   // transport errors, bad status, other error texts
	Missed         int64   `json:"missed"`   // with Rate: offers due while every client was busy
	OffersPerSec   float64 `json:"offers_per_sec"`
	MatchesPerSec  float64 `json:"matches_per_sec"`
	// Latency is the time from sending an offer to receiving the answer,
	// over matched offers only (denials return at once).
	Latency          measure.Percentiles `json:"latency"`
	BrokerRSSBytes   int64               `json:"broker_rss_bytes,omitempty"`
	BrokerCPUPercent float64             `json:"broker_cpu_percent,omitempty"` // of one core
	// BrokerCPUPerMatchMicros is the broker's CPU time over the step
	// (user + system, every thread) divided by the step's matches.
	BrokerCPUPerMatchMicros float64 `json:"broker_cpu_us_per_match,omitempty"`
}

// ProxyCounts counts what the simulated proxies saw over the client steps.
type ProxyCounts struct {
	Polls                int64 `json:"polls"`
	Matches              int64 `json:"matches"`
	NoMatch              int64 `json:"no_match"`
	RelayPatternRejected int64 `json:"relay_pattern_rejected"`
	Errors               int64 `json:"errors"`
	AnswersSuccess       int64 `json:"answers_success"`
	AnswersClientGone    int64 `json:"answers_client_gone"`
	AnswerErrors         int64 `json:"answer_errors"`
}

// IdleResult is the idle-poll phase: broker memory per waiting poll.
type IdleResult struct {
	BaselineRSSBytes int64      `json:"baseline_rss_bytes,omitempty"`
	SettleSeconds    float64    `json:"settle_seconds"`
	WindowSeconds    float64    `json:"window_seconds,omitempty"` // IdleWindow
	Burst            bool       `json:"burst"`                    // each step's polls arrived at once
	Steps            []IdleStep `json:"steps"`
	// BytesPerPoll is the last step's figure.
	BytesPerPoll float64 `json:"bytes_per_poll,omitempty"`
	Polls        int64   `json:"polls"`   // polls completed (each held ~10 s)
	Matched      int64   `json:"matched"` // should be 0: no clients run
	Errors       int64   `json:"errors"`
}

// IdleStep is the broker's memory while Polls polls were held.
type IdleStep struct {
	Polls        int     `json:"polls"`
	Waiting      int64   `json:"waiting"` // polls sent and not yet answered when sampled (median)
	RSSBytes     int64   `json:"rss_bytes,omitempty"`
	BytesPerPoll float64 `json:"bytes_per_poll,omitempty"` // (RSSBytes - baseline) / Waiting
	// With IdleWindow: the largest RSS sampled, and its figure per poll.
	MaxRSSBytes     int64   `json:"max_rss_bytes,omitempty"`
	MaxBytesPerPoll float64 `json:"max_bytes_per_poll,omitempty"`
}

// withDefaults fills in cfg's defaults, normalises its URLs and checks it.
func (cfg BrokerConfig) withDefaults() (BrokerConfig, error) {
	cfg = cfg.filled()
	if err := cfg.parseURLs(); err != nil {
		return cfg, err
	}
	if err := cfg.check(); err != nil {
		return cfg, err
	}
	// Let the encoders check the rest once, up front.
	for _, e := range cfg.ProxyTypes {
		if _, err := cfg.pollTemplate(0, e.Value, messages.NATUnknown); err != nil {
			return cfg, fmt.Errorf("%w: proxy type %q or relay pattern %q: %w", measure.ErrInvalidConfig, e.Value, cfg.RelayPattern, err)
		}
	}
	if _, err := (messages.ClientPollRequest{Offer: brokerwire.FixedOffer, Fingerprint: cfg.Fingerprint}).Encode(); err != nil {
		return cfg, fmt.Errorf("%w: fingerprint %q: %w", measure.ErrInvalidConfig, cfg.Fingerprint, err)
	}
	return cfg, nil
}

// filled returns cfg with its defaults filled in and its lists copied.
func (cfg BrokerConfig) filled() BrokerConfig {
	if cfg.Proxies == 0 {
		cfg.Proxies = DefaultBrokerProxies
	}
	cfg.Clients = slices.Clone(cfg.Clients)
	if len(cfg.Clients) == 0 {
		cfg.Clients = []int{DefaultBrokerClients}
	}
	cfg.IdlePolls = slices.Clone(cfg.IdlePolls)
	slices.Sort(cfg.IdlePolls)
	if cfg.StepDuration == 0 {
		cfg.StepDuration = DefaultStepDuration
	}
	if cfg.IdleSettle == 0 {
		cfg.IdleSettle = DefaultIdleSettle
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = brokerwire.DefaultRequestTimeout
	}
	if cfg.ProxyNAT == nil {
		cfg.ProxyNAT = mustMix(DefaultProxyNATMix)
	}
	if cfg.ProxyTypes == nil {
		cfg.ProxyTypes = mustMix(DefaultProxyTypeMix)
	}
	if cfg.ClientNAT == nil {
		cfg.ClientNAT = mustMix(DefaultClientNATMix)
	}
	if cfg.Fingerprint == "" {
		cfg.Fingerprint = messages.DefaultBridgeFingerprint
	}
	cfg.Proxies = max(cfg.Proxies, 0)
	cfg.Progress = measure.LockWriter(cfg.Progress)
	cfg.CheckURLs = slices.Clone(cfg.CheckURLs)
	return cfg
}

// parseURLs checks cfg's URLs (loopback unless AllowNonLoopback) and
// normalises URL and ClientURL.
func (cfg *BrokerConfig) parseURLs() error {
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "http", "https")
	if err != nil {
		return err
	}
	cfg.URL = strings.TrimSuffix(u.String(), "/")
	for _, c := range cfg.CheckURLs {
		if _, err := measure.ParseURL(c, cfg.AllowNonLoopback, "http", "https"); err != nil {
			return err
		}
	}
	if cfg.ClientURL != "" {
		cu, err := measure.ParseURL(cfg.ClientURL, cfg.AllowNonLoopback, "http", "https")
		if err != nil {
			return err
		}
		cfg.ClientURL = strings.TrimSuffix(cu.String(), "/")
	}
	return nil
}

// check checks cfg's counts, durations, mixes and relay pattern.
func (cfg *BrokerConfig) check() error {
	switch {
	case cfg.Proxies > measure.MaxPeers:
		return fmt.Errorf("%w: proxies %d out of range 0..%d", measure.ErrInvalidConfig, cfg.Proxies, measure.MaxPeers)
	case len(cfg.Clients) > measure.MaxSteps || len(cfg.IdlePolls) > measure.MaxSteps:
		return fmt.Errorf("%w: at most %d steps", measure.ErrInvalidConfig, measure.MaxSteps)
	case cfg.StepDuration < 0 || cfg.IdleSettle < 0 || cfg.IdleWindow < 0 || cfg.RequestTimeout < 0:
		return fmt.Errorf("%w: negative duration", measure.ErrInvalidConfig)
	case cfg.Rate < 0:
		return fmt.Errorf("%w: negative rate", measure.ErrInvalidConfig)
	}
	for _, n := range cfg.Clients {
		if n < 0 || n > measure.MaxPeers {
			return fmt.Errorf("%w: clients %d out of range 0..%d", measure.ErrInvalidConfig, n, measure.MaxPeers)
		}
	}
	for _, n := range cfg.IdlePolls {
		if n <= 0 || n > measure.MaxPeers {
			return fmt.Errorf("%w: idle polls %d out of range 1..%d", measure.ErrInvalidConfig, n, measure.MaxPeers)
		}
	}
	for _, m := range []Mix{cfg.ProxyNAT, cfg.ClientNAT} {
		for _, e := range m {
			if _, err := messages.NormalizeNAT(e.Value); err != nil || e.Value == "" {
				return fmt.Errorf("%w: NAT type %q (want unrestricted, restricted or unknown)", measure.ErrInvalidConfig, e.Value)
			}
		}
	}
	if _, err := relaypattern.Parse(cfg.RelayPattern); err != nil {
		return fmt.Errorf("%w: relay pattern %q: %w", measure.ErrInvalidConfig, cfg.RelayPattern, err)
	}
	return nil
}

// pollTemplate returns a poll template for a proxy of type typ and NAT nat
// reporting clients clients.
func (cfg *BrokerConfig) pollTemplate(clients int, typ, nat string) (brokerwire.SidTemplate, error) {
	pattern := cfg.RelayPattern
	return brokerwire.NewSidTemplate(func(sid string) ([]byte, error) {
		return messages.ProxyPollRequest{Sid: sid, Type: typ, NAT: nat, Clients: clients, AcceptedRelayPattern: &pattern}.Encode()
	})
}

// brokerRun is the state of one RunBroker call.
type brokerRun struct {
	cfg    BrokerConfig
	client *brokerwire.H1Client
	// clients is where clients send offers: client, or ClientURL's.
	clients *brokerwire.H1Client
	proc    procstat.Watcher
	errs    measure.ErrorSamples

	proxy struct {
		polls, matches, noMatch, rejected, errors atomic.Int64
		answerOK, answerGone, answerErr           atomic.Int64
	}
	clientBodies map[string][]byte // by NAT; read-only once built
}

// RunBroker drives the broker at cfg.URL: an optional idle phase
// (cfg.IdlePolls), then one step per cfg.Clients entry with cfg.Proxies
// proxies polling throughout. It returns what it measured; when ctx ends
// early it returns the steps so far and ctx's error.
func RunBroker(ctx context.Context, cfg BrokerConfig) (BrokerResult, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return BrokerResult{}, err
	}
	r, err := newBrokerRun(cfg)
	if err != nil {
		return BrokerResult{}, err
	}
	res := BrokerResult{
		URL: cfg.URL, ClientURL: cfg.ClientURL, Proxies: cfg.Proxies, ProxyNAT: cfg.ProxyNAT.String(), ProxyTypes: cfg.ProxyTypes.String(),
		ClientNAT: cfg.ClientNAT.String(), RelayPattern: cfg.RelayPattern, Rate: cfg.Rate,
		StepSeconds: measure.Seconds(cfg.StepDuration), BrokerPID: cfg.PID,
	}
	if _, _, err := r.proc.Sample(); err != nil {
		return res, err
	}
	if len(cfg.IdlePolls) > 0 {
		idle := r.runIdle(ctx) // its connections are closed
		res.Idle = &idle
		// Let the broker notice that the idle polls have gone before
		// clients arrive, so that no client is matched with one of them.
		sleep.For(ctx, r.cfg.IdleSettle)
		if err := ctx.Err(); err != nil {
			res.ErrorSamples = r.errs.Get()
			return res, err
		}
	}
	res.Steps = r.runSteps(ctx)
	res.Proxy = r.proxyCounts()
	res.ErrorSamples = r.errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.Leftovers = checkLeftovers(ctx, cfg.CheckURLs)
	var matches, offers int64
	for _, s := range res.Steps {
		matches += s.Matches
		offers += s.Offers
	}
	if offers > 0 && matches == 0 {
		return res, fmt.Errorf("%w: %d offers, no match (errors: %s)", measure.ErrNoProgress, offers, strings.Join(res.ErrorSamples, "; "))
	}
	return res, nil
}

// newBrokerRun raises the file limit for cfg's connections and prepares
// the clients and their request bodies.
func newBrokerRun(cfg BrokerConfig) (*brokerRun, error) {
	conns := cfg.Proxies + slices.Max(cfg.Clients)
	if len(cfg.IdlePolls) > 0 {
		conns = max(conns, slices.Max(cfg.IdlePolls))
	}
	if _, err := measure.RaiseFileLimit(uint64(conns) + 256); err != nil {
		return nil, err
	}
	u, err := url.Parse(cfg.URL) // checked by withDefaults
	if err != nil {
		return nil, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
	}
	r := &brokerRun{
		cfg:          cfg,
		client:       brokerwire.NewH1Client(u, cfg.RequestTimeout, cfg.Insecure, cfg.AllowNonLoopback),
		proc:         procstat.Watcher{PID: cfg.PID},
		clientBodies: make(map[string][]byte),
	}
	r.clients = r.client
	if cfg.ClientURL != "" {
		cu, err := url.Parse(cfg.ClientURL) // checked by withDefaults
		if err != nil {
			return nil, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
		}
		r.clients = brokerwire.NewH1Client(cu, cfg.RequestTimeout, cfg.Insecure, cfg.AllowNonLoopback)
	}
	if _, err := brokerwire.AnswerTemplate(); err != nil {
		return nil, err
	}
	for _, e := range cfg.ClientNAT {
		b, err := messages.ClientPollRequest{Offer: brokerwire.FixedOffer, NAT: e.Value, Fingerprint: cfg.Fingerprint}.Encode()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
		}
		r.clientBodies[e.Value] = b
	}
	return r, nil
}

// runSteps runs the client steps with the proxies polling throughout.
func (r *brokerRun) runSteps(ctx context.Context) []BrokerStep {
	proxyCtx, stopProxies := context.WithCancel(ctx)
	var proxies sync.WaitGroup
	for i := range r.cfg.Proxies {
		proxies.Go(func() { r.proxyLoop(proxyCtx, i) })
	}
	var steps []BrokerStep
	for i, n := range r.cfg.Clients {
		if ctx.Err() != nil {
			break
		}
		measure.Say(r.cfg.Progress, "broker: step %d/%d: %d clients, %d proxies, %v", i+1, len(r.cfg.Clients), n, r.cfg.Proxies, r.cfg.StepDuration)
		steps = append(steps, r.runStep(ctx, i, n))
	}
	stopProxies()
	proxies.Wait()
	return steps
}

// proxyCounts are the simulated proxies' counts so far.
func (r *brokerRun) proxyCounts() ProxyCounts {
	return ProxyCounts{
		Polls: r.proxy.polls.Load(), Matches: r.proxy.matches.Load(), NoMatch: r.proxy.noMatch.Load(),
		RelayPatternRejected: r.proxy.rejected.Load(), Errors: r.proxy.errors.Load(),
		AnswersSuccess: r.proxy.answerOK.Load(), AnswersClientGone: r.proxy.answerGone.Load(),
		AnswerErrors: r.proxy.answerErr.Load(),
	}
}

// proxyLoop is simulated proxy i: poll, answer a match, poll again at once
// (a real proxy waits NextPoll; a load test wants proxies available), all
// on one keep-alive connection.
func (r *brokerRun) proxyLoop(ctx context.Context, i int) {
	nat := r.cfg.ProxyNAT.pick(i)
	typ := r.cfg.ProxyTypes.pick(i)
	pollT, err := r.cfg.pollTemplate((i%4)*8, typ, nat)
	if err != nil { // validated in withDefaults
		r.proxy.errors.Add(1)
		return
	}
	ans, err := brokerwire.AnswerTemplate()
	if err != nil { // checked in RunBroker
		r.proxy.answerErr.Add(1)
		return
	}
	hc := r.client.Conn(ctx)
	defer hc.Close()
	var sid [brokerwire.SidLength]byte
	for ctx.Err() == nil {
		brokerwire.FillSid(&sid)
		status, resp, err := hc.Post("/proxy", pollT.With(&sid), messages.MaxBodySize, nil)
		if ctx.Err() != nil {
			return
		}
		r.proxy.polls.Add(1)
		if err != nil || status != http.StatusOK {
			r.proxy.errors.Add(1)
			r.errs.Add(brokerwire.HTTPErrorText("proxy poll", status, err))
			sleep.For(ctx, 100*time.Millisecond)
			continue
		}
		poll, err := messages.DecodeProxyPollResponse(resp)
		switch {
		case errors.Is(err, messages.ErrIncorrectRelayPattern):
			r.proxy.rejected.Add(1)
			r.errs.Add(fmt.Sprintf("proxy poll: broker says %q for relay pattern %q", messages.StatusIncorrectRelayPattern, r.cfg.RelayPattern))
			sleep.For(ctx, time.Second)
		case err != nil:
			r.proxy.errors.Add(1)
			r.errs.Add("proxy poll response: " + err.Error())
			sleep.For(ctx, 100*time.Millisecond)
		case poll.Status == messages.StatusNoMatch:
			r.proxy.noMatch.Add(1)
		case poll.Status == messages.StatusClientMatch:
			r.proxy.matches.Add(1)
			r.answer(ctx, hc, ans.With(&sid))
		}
	}
}

// answer posts a matched poll's answer (body) on the proxy's connection.
func (r *brokerRun) answer(ctx context.Context, hc *brokerwire.H1Conn, body []byte) {
	status, resp, err := hc.Post("/answer", body, messages.MaxBodySize, nil)
	if ctx.Err() != nil {
		return
	}
	if err != nil || status != http.StatusOK {
		r.proxy.answerErr.Add(1)
		r.errs.Add(brokerwire.HTTPErrorText("answer", status, err))
		return
	}
	ans, err := messages.DecodeProxyAnswerResponse(resp)
	switch {
	case err != nil:
		r.proxy.answerErr.Add(1)
		r.errs.Add("answer response: " + err.Error())
	case ans.Status == messages.StatusSuccess:
		r.proxy.answerOK.Add(1)
	default:
		r.proxy.answerGone.Add(1)
	}
}

// runStep runs n clients for StepDuration and waits for their last offers.
func (r *brokerRun) runStep(ctx context.Context, index, n int) BrokerStep {
	before, haveBefore, _ := r.proc.Sample()
	stepCtx, cancel := context.WithTimeout(ctx, r.cfg.StepDuration)
	defer cancel()
	var c brokerwire.StepCounters
	lat := measure.NewRecorder()
	start := time.Now()

	var tokens chan struct{}
	var wg sync.WaitGroup
	if r.cfg.Rate > 0 && n > 0 {
		tokens = make(chan struct{}, n)
		wg.Go(func() { measure.Pace(stepCtx, r.cfg.Rate, tokens, &c.Missed) })
	}
	for i := range n {
		wg.Go(func() { r.clientLoop(ctx, stepCtx, i, tokens, &c, lat) })
	}
	prog := measure.StartProgress(r.cfg.Progress, r.cfg.ProgressInterval, func() string {
		el := time.Since(start)
		return fmt.Sprintf("broker: step %d, %d clients, %.0fs/%v: %d offers, %d matches (%.0f/s), %d denials, %d timeouts, %d errors",
			index+1, n, el.Seconds(), r.cfg.StepDuration, c.Offers.Load(), c.Matches.Load(),
			measure.Rate(c.Matches.Load(), el), c.Denials.Load(), c.Timeouts.Load(), c.Errors.Load())
	})
	wg.Wait()
	prog.Stop()
	elapsed := time.Since(start)

	step := BrokerStep{
		Clients: n, ElapsedSeconds: measure.Seconds(elapsed),
		Offers: c.Offers.Load(), Matches: c.Matches.Load(), Denials: c.Denials.Load(),
		Timeouts: c.Timeouts.Load(), Errors: c.Errors.Load(), Missed: c.Missed.Load(),
		Latency: lat.Percentiles(),
	}
	step.OffersPerSec = measure.Rate(step.Offers, elapsed)
	step.MatchesPerSec = measure.Rate(step.Matches, elapsed)
	if after, ok, _ := r.proc.Sample(); ok && haveBefore {
		step.BrokerRSSBytes = after.RSS
		step.BrokerCPUPercent = procstat.CPUPercent(before, after)
		step.BrokerCPUPerMatchMicros = procstat.CPUPerEvent(before, after, step.Matches)
	}
	return step
}

// clientLoop is simulated client i. New offers start only while stepCtx
// lasts; the request itself runs under ctx so that it can finish.
func (r *brokerRun) clientLoop(ctx, stepCtx context.Context, i int, tokens <-chan struct{}, c *brokerwire.StepCounters, lat *measure.Recorder) {
	body := r.clientBodies[r.cfg.ClientNAT.pick(i)]
	hc := r.clients.Conn(ctx)
	defer hc.Close()
	for {
		if tokens != nil {
			select {
			case <-stepCtx.Done():
				return
			case <-tokens:
			}
		}
		if stepCtx.Err() != nil {
			return
		}
		start := time.Now()
		status, resp, err := hc.Post("/client", body, messages.MaxBodySize, nil)
		d := time.Since(start)
		if ctx.Err() != nil {
			return
		}
		c.Offers.Add(1)
		if err != nil || status != http.StatusOK {
			c.Errors.Add(1)
			r.errs.Add(brokerwire.HTTPErrorText("client offer", status, err))
			sleep.For(stepCtx, 100*time.Millisecond) // do not spin on a dead broker
			continue
		}
		cr, err := messages.DecodeClientPollResponse(resp)
		switch {
		case err != nil:
			c.Errors.Add(1)
			r.errs.Add("client response: " + err.Error())
		case cr.Answer != "":
			// Our proxies' answer, passed on verbatim; anything else must
			// at least be a session description.
			if cr.Answer != brokerwire.FixedAnswer {
				if _, err := messages.DecodeSessionDescription(cr.Answer); err != nil {
					c.Errors.Add(1)
					r.errs.Add("client answer: " + err.Error())
					continue
				}
			}
			c.Matches.Add(1)
			lat.Add(d)
		case cr.Error == messages.StrNoProxies:
			c.Denials.Add(1)
		case cr.Error == messages.StrTimedOut:
			c.Timeouts.Add(1)
		default:
			c.Errors.Add(1)
			r.errs.Add(fmt.Sprintf("client: broker error %q", cr.Error))
		}
	}
}

// idleBatch is how many idle polls start together when they ramp.
const idleBatch = 250

// runIdle holds cfg.IdlePolls polls in ascending steps and samples the
// broker's memory at each.
func (r *brokerRun) runIdle(ctx context.Context) IdleResult {
	res := IdleResult{SettleSeconds: measure.Seconds(r.cfg.IdleSettle), WindowSeconds: measure.Seconds(r.cfg.IdleWindow), Burst: r.cfg.IdleBurst}
	if s, ok, _ := r.proc.Sample(); ok {
		res.BaselineRSSBytes = s.RSS
	}
	idleCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg                       sync.WaitGroup
		waiting                  atomic.Int64
		polls, matched, failures atomic.Int64
	)
	started := 0 // owned by this goroutine; pollers mirrors it for progress
	var pollers atomic.Int64
	prog := measure.StartProgress(r.cfg.Progress, r.cfg.ProgressInterval, func() string {
		return fmt.Sprintf("broker idle: %d pollers, %d polls waiting, %d completed, %d errors",
			pollers.Load(), waiting.Load(), polls.Load(), failures.Load())
	})
	for _, k := range r.cfg.IdlePolls {
		measure.Say(r.cfg.Progress, "broker idle: ramping to %d waiting polls", k)
		// Ramp in batches so as not to overflow the broker's listen
		// backlog, unless asked to arrive at once.
		batch := idleBatch
		if r.cfg.IdleBurst {
			batch = k
		}
		for started < k && ctx.Err() == nil {
			n := min(batch, k-started)
			for j := range n {
				i := started + j
				wg.Go(func() { r.idlePoller(idleCtx, i, &waiting, &polls, &matched, &failures) })
			}
			started += n
			pollers.Store(int64(started))
			waitFor(ctx, 5*time.Second, func() bool { return waiting.Load() >= int64(started)*9/10 })
		}
		waitFor(ctx, 30*time.Second, func() bool { return waiting.Load() >= int64(k) })
		if !sleep.For(ctx, r.cfg.IdleSettle) {
			break
		}
		samples, gap := 5, measure.SampleGap(r.cfg.IdleSettle)
		if r.cfg.IdleWindow > 0 {
			gap = 200 * time.Millisecond
			samples = max(1, int(r.cfg.IdleWindow/gap))
		}
		var rss, w []int64
		for range samples {
			if s, ok, _ := r.proc.Sample(); ok {
				rss = append(rss, s.RSS)
			}
			w = append(w, waiting.Load())
			sleep.For(ctx, gap)
		}
		step := IdleStep{Polls: k, Waiting: measure.Median(w)}
		if len(rss) > 0 {
			step.RSSBytes = measure.Median(rss)
			if r.cfg.IdleWindow > 0 {
				step.MaxRSSBytes = slices.Max(rss)
			}
			if step.Waiting > 0 {
				step.BytesPerPoll = float64(step.RSSBytes-res.BaselineRSSBytes) / float64(step.Waiting)
				res.BytesPerPoll = step.BytesPerPoll
				if step.MaxRSSBytes > 0 {
					step.MaxBytesPerPoll = float64(step.MaxRSSBytes-res.BaselineRSSBytes) / float64(step.Waiting)
				}
			}
		}
		res.Steps = append(res.Steps, step)
		measure.Say(r.cfg.Progress, "broker idle: %d polls waiting, broker RSS %s (%.0f bytes/poll)", step.Waiting, measure.MiB(step.RSSBytes), step.BytesPerPoll)
	}
	cancel()
	wg.Wait()
	prog.Stop()
	res.Polls, res.Matched, res.Errors = polls.Load(), matched.Load(), failures.Load()
	return res
}

// idlePoller polls again as soon as each poll returns, on one connection.
// waiting counts its poll from the moment the request is written until the
// reply.
func (r *brokerRun) idlePoller(ctx context.Context, i int, waiting, polls, matched, failures *atomic.Int64) {
	pollT, err1 := r.cfg.pollTemplate(0, r.cfg.ProxyTypes.pick(i), r.cfg.ProxyNAT.pick(i))
	ans, err2 := brokerwire.AnswerTemplate()
	if err1 != nil || err2 != nil { // checked before
		failures.Add(1)
		return
	}
	hc := r.client.Conn(ctx)
	defer hc.Close()
	var sid [brokerwire.SidLength]byte
	counted := false
	wrote := func() {
		counted = true
		waiting.Add(1)
	}
	for ctx.Err() == nil {
		brokerwire.FillSid(&sid)
		status, resp, err := hc.Post("/proxy", pollT.With(&sid), messages.MaxBodySize, wrote)
		if counted {
			counted = false
			waiting.Add(-1)
		}
		if ctx.Err() != nil {
			return
		}
		polls.Add(1)
		if err != nil || status != http.StatusOK {
			failures.Add(1)
			r.errs.Add(brokerwire.HTTPErrorText("idle poll", status, err))
			sleep.For(ctx, 200*time.Millisecond)
			continue
		}
		poll, err := messages.DecodeProxyPollResponse(resp)
		switch {
		case err != nil:
			failures.Add(1)
			r.errs.Add("idle poll response: " + err.Error())
			sleep.For(ctx, time.Second)
		case poll.Status == messages.StatusClientMatch:
			// Someone else's client: answer so that it is not left waiting.
			matched.Add(1)
			r.answer(ctx, hc, ans.With(&sid))
		}
	}
}

// waitFor polls cond every 20 ms for at most d.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) || !sleep.For(ctx, 20*time.Millisecond) {
			return false
		}
	}
	return true
}

// WriteTable writes b as readable tables: the idle phase, the client
// steps, the proxies' counts and what was left after the load.
func (b BrokerResult) WriteTable(w io.Writer) {
	t := measure.NewTable(w)
	if b.Idle != nil {
		b.Idle.writeTable(t, b.URL)
	}
	t.Title(fmt.Sprintf("broker %s: %d proxies (NAT %s; types %s), clients NAT %s, %.0fs steps",
		b.URL, b.Proxies, b.ProxyNAT, b.ProxyTypes, b.ClientNAT, b.StepSeconds))
	t.Line("clients", "offers", "matches", "matches/s", "denials", "timeouts", "errors", "p50 ms", "p90 ms", "p99 ms", "broker RSS", "broker CPU", "CPU µs/match")
	for _, s := range b.Steps {
		t.Line(s.Clients, s.Offers, s.Matches, fmt.Sprintf("%.0f", s.MatchesPerSec), s.Denials, s.Timeouts, s.Errors,
			fmt.Sprintf("%.2f", s.Latency.P50Ms), fmt.Sprintf("%.2f", s.Latency.P90Ms), fmt.Sprintf("%.2f", s.Latency.P99Ms),
			measure.MiBOrDash(s.BrokerRSSBytes), measure.CPUOrDash(s.BrokerCPUPercent), measure.MicrosOrDash(s.BrokerCPUPerMatchMicros))
	}
	p := b.Proxy
	t.Flush()
	fmt.Fprintf(w, "proxies: %d polls, %d matched, %d no match, %d relay pattern rejected, %d errors; answers: %d success, %d client gone, %d errors\n",
		p.Polls, p.Matches, p.NoMatch, p.RelayPatternRejected, p.Errors, p.AnswersSuccess, p.AnswersClientGone, p.AnswerErrors)
	for _, l := range b.Leftovers {
		if l.Error != "" {
			fmt.Fprintf(w, "after the load, %s: %s\n", l.URL, l.Error)
			continue
		}
		fmt.Fprintf(w, "after the load, %s: %.0f waiting polls, %.0f goroutines\n", l.URL, l.WaitingPolls, l.Goroutines)
	}
	measure.WriteErrors(w, b.ErrorSamples)
}

// writeTable writes the idle phase of the broker at url.
func (idle *IdleResult) writeTable(t *measure.Table, url string) {
	arrival := "in batches"
	if idle.Burst {
		arrival = "arriving at once"
	}
	t.Title(fmt.Sprintf("broker %s: memory per waiting proxy poll, %s (baseline RSS %s)", url, arrival, measure.MiBOrDash(idle.BaselineRSSBytes)))
	window := idle.WindowSeconds > 0 // the largest sample too
	head := []any{"polls", "waiting", "broker RSS", "per poll"}
	if window {
		head = append(head, "max RSS", "max per poll")
	}
	t.Line(head...)
	for _, s := range idle.Steps {
		cells := []any{s.Polls, s.Waiting, measure.MiBOrDash(s.RSSBytes), measure.KiB(s.BytesPerPoll)}
		if window {
			cells = append(cells, measure.MiBOrDash(s.MaxRSSBytes), measure.KiB(s.MaxBytesPerPoll))
		}
		t.Line(cells...)
	}
}

// Plots returns the charts b has data for: latency and matches against
// load and, given the broker's PID, memory against waiting polls.
func (b BrokerResult) Plots() []measure.Plot {
	var out []measure.Plot
	if len(b.Steps) > 0 {
		var p50, p90, p99, rate measure.Series
		p50.Name, p90.Name, p99.Name, rate.Name = "p50", "p90", "p99", "matches/s"
		for _, s := range b.Steps {
			x := float64(s.Clients)
			rate.Points = append(rate.Points, [2]float64{x, s.MatchesPerSec})
			if s.Latency.Count == 0 {
				continue // no match, no latency: leave a gap rather than a zero
			}
			p50.Points = append(p50.Points, [2]float64{x, s.Latency.P50Ms})
			p90.Points = append(p90.Points, [2]float64{x, s.Latency.P90Ms})
			p99.Points = append(p99.Points, [2]float64{x, s.Latency.P99Ms})
		}
		out = append(out,
			measure.Plot{Title: fmt.Sprintf("Broker client latency against load (%d proxies)", b.Proxies), XLabel: "concurrent clients", YLabel: "latency (ms)", Series: []measure.Series{p50, p90, p99}},
			measure.Plot{Title: fmt.Sprintf("Broker matches per second (%d proxies)", b.Proxies), XLabel: "concurrent clients", YLabel: "matches/s", Series: []measure.Series{rate}})
	}
	if b.Idle != nil && b.Idle.BaselineRSSBytes > 0 && len(b.Idle.Steps) > 0 {
		s := measure.Series{Name: "broker RSS", Points: [][2]float64{{0, float64(b.Idle.BaselineRSSBytes) / (1 << 20)}}}
		for _, st := range b.Idle.Steps {
			s.Points = append(s.Points, [2]float64{float64(st.Waiting), float64(st.RSSBytes) / (1 << 20)})
		}
		out = append(out, measure.Plot{Title: "Broker memory against waiting proxy polls", XLabel: "waiting polls", YLabel: "RSS (MiB)", Series: []measure.Series{s}})
	}
	return out
}
