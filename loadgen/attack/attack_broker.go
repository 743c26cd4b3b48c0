package attack

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/messages"
)

// Broker attacks (RunBrokerAttack): one attacker address floods the broker
// while honest proxies and clients, each at an address of its own in
// 127.0.0.0/8, rendezvous as usual. The run has two phases of equal length
// with the same honest load, first without the attack (the baseline), then
// with it, and compares the honest clients' match rate.
const (
	// AttackJunkOffers posts client offers no proxy can answer (the
	// issue's {"type":"offer","sdp":"x"}, and SDP without ICE
	// credentials): a broker that passes them on has an honest proxy
	// leave its client unanswered, and may count that against it.
	AttackJunkOffers = "junk-offers"
	// AttackAMPFlood sends valid offers to GET /amp/client/ as fast as it
	// can, straight from one address, taking waiting proxies away from
	// honest clients (pool draining).
	AttackAMPFlood = "amp-flood"
	// AttackConnFlood opens and holds as many TCP connections as it can
	// from a few addresses (FloodAddrs), sending nothing on them and
	// opening a new one whenever the broker closes one: the attack on
	// the broker's file descriptors (attack_connflood.go).
	AttackConnFlood = "connflood"
)

// Defaults and limits of BrokerAttackConfig.
const (
	DefaultAttackRequests    = 10_000
	DefaultAttackConcurrency = 16
	DefaultAttackProxies     = 50
	DefaultAttackClients     = 20
	DefaultAttackClientRate  = 20.0
	DefaultAttackDuration    = 20 * time.Second
	DefaultAttackerAddr      = "127.0.0.1"

	maxAttackRequests = 1_000_000
	maxAttackConns    = 1024
)

// BrokerAttackConfig configures RunBrokerAttack.
type BrokerAttackConfig struct {
	// URL is the broker's base URL; it must be an IPv4 loopback address
	// (the honest peers dial from addresses of their own in 127.0.0.0/8).
	URL string
	// Attack is AttackJunkOffers or AttackAMPFlood.
	Attack string
	// Requests bounds the attack requests. Default DefaultAttackRequests.
	Requests int
	// Concurrency is the attacker's connections, each sending back to
	// back. Default DefaultAttackConcurrency.
	Concurrency int
	// AttackRate, if positive, paces the attack at that many requests per
	// second in all (so that it spans the phase); zero means back to back.
	AttackRate float64
	// AttackerAddr is the attacker's source address (in 127.0.0.0/8).
	// Default DefaultAttackerAddr.
	AttackerAddr string

	// Proxies honest proxies poll throughout, answering every offer they
	// can (one a WebRTC proxy could answer) at once. Default
	// DefaultAttackProxies.
	Proxies int
	// ProxyInterval is how long an honest proxy waits after each poll
	// before the next (a real one waits the broker's NextPoll, 20 s): it
	// bounds how many proxies come back per second, which a pool-draining
	// attack competes for. Zero means at once.
	ProxyInterval time.Duration
	// Clients honest clients send ClientRate offers per second in all.
	// Defaults DefaultAttackClients and DefaultAttackClientRate.
	Clients    int
	ClientRate float64
	// Duration is the length of each phase; the attack also stops when it
	// ends. Default DefaultAttackDuration.
	Duration time.Duration
	// Fingerprint is the bridge the clients ask for. Default
	// messages.DefaultBridgeFingerprint.
	Fingerprint string
	// RequestTimeout bounds every HTTP request. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration

	// FloodAddrs are AttackConnFlood's source addresses (IPv4 loopback,
	// outside the honest peers' 127.1.0.0/16 and 127.2.0.0/16). Default
	// DefaultFloodAddrs. With AttackConnFlood, Requests bounds the
	// connections opened in all and AttackerAddr is not used.
	FloodAddrs []string
	// ConnsPerAddr is how many connections AttackConnFlood tries to hold
	// from each of FloodAddrs at once. Default DefaultFloodConnsPerAddr.
	ConnsPerAddr int
	// HonestNewConns makes every honest request use a new connection
	// (closed after its reply), as peers arriving at the broker do: a
	// flood of connections hurts those that need a new file descriptor,
	// not the keep-alive connections peers already hold.
	HonestNewConns bool
	// MetricsURL, if set, is the broker's Prometheus URL (its operator
	// listener's /prometheus): the growth of its refused connections and
	// failed accepts over each phase is reported.
	MetricsURL string

	// Progress, if not nil, receives a progress line every
	// ProgressInterval (default DefaultProgressInterval).
	Progress         io.Writer
	ProgressInterval time.Duration
}

// BrokerAttackResult is what RunBrokerAttack measured.
type BrokerAttackResult struct {
	URL                  string  `json:"url"`
	Attack               string  `json:"attack"`
	AttackerAddr         string  `json:"attacker_addr"`
	Proxies              int     `json:"proxies"`
	ProxyIntervalSeconds float64 `json:"proxy_interval_seconds"`
	Clients              int     `json:"clients"`
	ClientRate           float64 `json:"client_rate_per_sec"`
	PhaseSeconds         float64 `json:"phase_seconds"`
	// HonestNewConns: every honest request came on a new connection.
	HonestNewConns bool `json:"honest_new_conns,omitempty"`

	Baseline HonestPhase `json:"baseline"`
	Flood    HonestPhase `json:"flood"`
	// MatchRateRatio is Flood.MatchRate / Baseline.MatchRate: the share
	// of their usual success honest clients kept during the attack.
	MatchRateRatio float64 `json:"match_rate_ratio"`
	// MatchesPerSecRatio is Flood.MatchesPerSec / Baseline.MatchesPerSec:
	// the share of their matches per second honest clients kept (offers
	// an attack delays are not made, which MatchRateRatio does not see).
	MatchesPerSecRatio float64 `json:"matches_per_sec_ratio"`

	Attacker AttackerCounts `json:"attacker"`
	// UnanswerableOffers counts the offers honest proxies received that
	// no WebRTC proxy could answer: each leaves its client unanswered,
	// which a broker that strikes silent proxies counts against the proxy.
	UnanswerableOffers int64    `json:"unanswerable_offers"`
	ProxyMatches       int64    `json:"proxy_matches"`
	ProxyAnswersGone   int64    `json:"proxy_answers_client_gone"` // answered too late: also a strike
	ErrorSamples       []string `json:"error_samples,omitempty"`
}

// HonestPhase is the honest clients' outcome over one phase.
type HonestPhase struct {
	Offers        int64   `json:"offers"`
	Matches       int64   `json:"matches"`
	Denials       int64   `json:"denials"`
	Timeouts      int64   `json:"timeouts"`
	Errors        int64   `json:"errors"` // includes 429 and other statuses
	Missed        int64   `json:"missed"` // offers due while every client was busy
	MatchRate     float64 `json:"match_rate"`
	MatchesPerSec float64 `json:"matches_per_sec"`
	// Broker is what the broker counted over the phase (with MetricsURL).
	Broker *BrokerConnCounts `json:"broker,omitempty"`
}

// AttackerCounts is what the attacker's requests got.
type AttackerCounts struct {
	Sent        int64   `json:"sent"`
	Seconds     float64 `json:"seconds"`
	RateLimited int64   `json:"rate_limited"` // 429
	Refused     int64   `json:"refused"`      // 200 with an error reply, or another 4xx
	Matched     int64   `json:"matched"`      // got a proxy's answer
	Errors      int64   `json:"errors"`       // transport errors, 5xx

	// AttackConnFlood only (Sent counts connection attempts, Refused the
	// connections closed by the broker at once, Errors failed dials).
	Flood *ConnFloodCounts `json:"conn_flood,omitempty"`
}

func (cfg BrokerAttackConfig) withDefaults() (BrokerAttackConfig, netip.Addr, error) {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if cfg.Attack == AttackConnFlood {
		def(&cfg.Requests, DefaultFloodRequests)
	}
	def(&cfg.Requests, DefaultAttackRequests)
	def(&cfg.Concurrency, DefaultAttackConcurrency)
	def(&cfg.Proxies, DefaultAttackProxies)
	def(&cfg.Clients, DefaultAttackClients)
	if cfg.ClientRate == 0 {
		cfg.ClientRate = DefaultAttackClientRate
	}
	if cfg.Duration == 0 {
		cfg.Duration = DefaultAttackDuration
	}
	if cfg.AttackerAddr == "" {
		cfg.AttackerAddr = DefaultAttackerAddr
	}
	if cfg.Fingerprint == "" {
		cfg.Fingerprint = messages.DefaultBridgeFingerprint
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = brokerwire.DefaultRequestTimeout
	}
	cfg.Progress = measure.LockWriter(cfg.Progress)
	u, err := measure.ParseURL(cfg.URL, false, "http", "https")
	if err != nil {
		return cfg, netip.Addr{}, err
	}
	cfg.URL = strings.TrimSuffix(u.String(), "/")
	if ip, err := netip.ParseAddr(u.Hostname()); err != nil || !ip.Is4() {
		return cfg, netip.Addr{}, fmt.Errorf("%w: the broker must be at an IPv4 loopback address (peers dial from 127.0.0.0/8)", measure.ErrInvalidConfig)
	}
	attacker, err := netip.ParseAddr(cfg.AttackerAddr)
	switch {
	case err != nil || !attackerAddrOK(attacker):
		return cfg, attacker, fmt.Errorf("%w: attacker address %q: want an IPv4 loopback address outside 127.1.0.0/16 and 127.2.0.0/16 (the honest peers')", measure.ErrInvalidConfig, cfg.AttackerAddr)
	case cfg.Attack != AttackJunkOffers && cfg.Attack != AttackAMPFlood && cfg.Attack != AttackConnFlood:
		return cfg, attacker, fmt.Errorf("%w: attack %q (want %s, %s or %s)", measure.ErrInvalidConfig, cfg.Attack, AttackJunkOffers, AttackAMPFlood, AttackConnFlood)
	case cfg.Requests < 0 || cfg.Requests > maxAttackRequests:
		return cfg, attacker, fmt.Errorf("%w: requests %d out of range 0..%d", measure.ErrInvalidConfig, cfg.Requests, maxAttackRequests)
	case cfg.Concurrency < 1 || cfg.Concurrency > maxAttackConns:
		return cfg, attacker, fmt.Errorf("%w: concurrency %d out of range 1..%d", measure.ErrInvalidConfig, cfg.Concurrency, maxAttackConns)
	case cfg.Proxies < 1 || cfg.Proxies > 60_000 || cfg.Clients < 1 || cfg.Clients > 60_000:
		return cfg, attacker, fmt.Errorf("%w: proxies and clients must be 1..60000", measure.ErrInvalidConfig)
	case cfg.ClientRate < 0 || cfg.AttackRate < 0 || cfg.Duration < 0 || cfg.RequestTimeout < 0 || cfg.ProxyInterval < 0:
		return cfg, attacker, fmt.Errorf("%w: negative rate or duration", measure.ErrInvalidConfig)
	}
	if _, err := (messages.ClientPollRequest{Offer: brokerwire.FixedOffer, Fingerprint: cfg.Fingerprint}).Encode(); err != nil {
		return cfg, attacker, fmt.Errorf("%w: fingerprint %q: %w", measure.ErrInvalidConfig, cfg.Fingerprint, err)
	}
	if cfg.Attack == AttackConnFlood {
		if err := cfg.floodDefaults(); err != nil {
			return cfg, attacker, err
		}
	}
	if cfg.MetricsURL != "" {
		if _, err := measure.ParseURL(cfg.MetricsURL, false, "http"); err != nil {
			return cfg, attacker, err
		}
	}
	return cfg, attacker, nil
}

// attackerAddrOK reports whether a is an IPv4 loopback address outside the
// honest peers' 127.1.0.0/16 and 127.2.0.0/16.
func attackerAddrOK(a netip.Addr) bool {
	return a.Is4() && a.IsLoopback() && a.As4()[1] != 1 && a.As4()[1] != 2
}

// peerAddr is the source address of honest peer i of a kind (1: proxies,
// 2: clients): 127.kind.x.y, never .0 or .255 in the last byte.
func peerAddr(kind byte, i int) netip.Addr {
	return netip.AddrFrom4([4]byte{127, kind, byte(i / 250), byte(i%250 + 1)})
}

// attackRun is the state of one RunBrokerAttack.
type attackRun struct {
	cfg      BrokerAttackConfig
	attacker netip.Addr
	client   *brokerwire.H1Client
	errs     measure.ErrorSamples
	offer    []byte // an honest client's poll request

	unanswerable, proxyMatches, answersGone atomic.Int64
}

// RunBrokerAttack measures honest clients' match rate at the broker at
// cfg.URL without, then during, the attack cfg.Attack (see
// AttackJunkOffers, AttackAMPFlood). The attack is bounded by
// cfg.Requests and by the phase's cfg.Duration.
func RunBrokerAttack(ctx context.Context, cfg BrokerAttackConfig) (BrokerAttackResult, error) {
	cfg, attacker, err := cfg.withDefaults()
	if err != nil {
		return BrokerAttackResult{}, err
	}
	if _, err := measure.RaiseFileLimit(uint64(cfg.Proxies+cfg.Clients+cfg.Concurrency+len(cfg.FloodAddrs)*cfg.ConnsPerAddr) + 256); err != nil {
		return BrokerAttackResult{}, err
	}
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return BrokerAttackResult{}, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
	}
	r := &attackRun{cfg: cfg, attacker: attacker, client: brokerwire.NewH1Client(u, cfg.RequestTimeout, true, false)}
	if r.offer, err = (messages.ClientPollRequest{Offer: brokerwire.FixedOffer, NAT: messages.NATUnknown, Fingerprint: cfg.Fingerprint}).Encode(); err != nil {
		return BrokerAttackResult{}, fmt.Errorf("%w: %w", measure.ErrInvalidConfig, err)
	}
	attackerName := attacker.String()
	if cfg.Attack == AttackConnFlood {
		attackerName = strings.Join(cfg.FloodAddrs, ",")
	}
	res := BrokerAttackResult{
		URL: cfg.URL, Attack: cfg.Attack, AttackerAddr: attackerName, HonestNewConns: cfg.HonestNewConns, Proxies: cfg.Proxies, ProxyIntervalSeconds: measure.Seconds(cfg.ProxyInterval),
		Clients: cfg.Clients, ClientRate: cfg.ClientRate, PhaseSeconds: measure.Seconds(cfg.Duration),
	}

	proxyCtx, stopProxies := context.WithCancel(ctx)
	var proxies sync.WaitGroup
	for i := range cfg.Proxies {
		proxies.Go(func() { r.proxyLoop(proxyCtx, i) })
	}
	measure.Say(cfg.Progress, "attack: baseline: %d honest proxies, %d honest clients at %.0f offers/s, %v", cfg.Proxies, cfg.Clients, cfg.ClientRate, cfg.Duration)
	res.Baseline = r.honestPhase(ctx, nil)
	if ctx.Err() == nil {
		if cfg.Attack == AttackConnFlood {
			measure.Say(cfg.Progress, "attack: %s from %s (%d connections held per address, %d opened at most) during the same honest load", cfg.Attack, attackerName, cfg.ConnsPerAddr, cfg.Requests)
		} else {
			measure.Say(cfg.Progress, "attack: %s from %v (%d requests at most, %d connections) during the same honest load", cfg.Attack, attacker, cfg.Requests, cfg.Concurrency)
		}
		res.Flood = r.honestPhase(ctx, &res.Attacker)
	}
	stopProxies()
	proxies.Wait()

	if res.Baseline.MatchRate > 0 {
		res.MatchRateRatio = res.Flood.MatchRate / res.Baseline.MatchRate
	}
	if res.Baseline.MatchesPerSec > 0 {
		res.MatchesPerSecRatio = res.Flood.MatchesPerSec / res.Baseline.MatchesPerSec
	}
	res.UnanswerableOffers = r.unanswerable.Load()
	res.ProxyMatches = r.proxyMatches.Load()
	res.ProxyAnswersGone = r.answersGone.Load()
	res.ErrorSamples = r.errs.Get()
	if err := ctx.Err(); err != nil {
		return res, err
	}
	if res.Baseline.Matches == 0 {
		return res, fmt.Errorf("%w: no honest client was matched even without the attack (errors: %s)", measure.ErrNoProgress, strings.Join(res.ErrorSamples, "; "))
	}
	return res, nil
}

// honestPhase runs the honest clients for one phase (and the attack, if
// attack is not nil, counted there) and waits for their last offers.
func (r *attackRun) honestPhase(ctx context.Context, attack *AttackerCounts) HonestPhase {
	phaseCtx, cancel := context.WithTimeout(ctx, r.cfg.Duration)
	defer cancel()
	var c brokerwire.StepCounters
	before := r.brokerConnCounts(ctx)
	start := time.Now()
	tokens := make(chan struct{}, r.cfg.Clients)
	var wg sync.WaitGroup
	wg.Go(func() { measure.Pace(phaseCtx, r.cfg.ClientRate, tokens, &c.Missed) })
	for i := range r.cfg.Clients {
		wg.Go(func() { r.clientLoop(ctx, phaseCtx, i, tokens, &c) })
	}
	if attack != nil && r.cfg.Attack == AttackConnFlood {
		wg.Go(func() { r.runConnFlood(phaseCtx, attack) })
	} else if attack != nil {
		wg.Go(func() { r.runAttack(phaseCtx, attack) })
	}
	prog := measure.StartProgress(r.cfg.Progress, r.cfg.ProgressInterval, func() string {
		return fmt.Sprintf("attack: %d honest offers, %d matched", c.Offers.Load(), c.Matches.Load())
	})
	wg.Wait()
	prog.Stop()
	elapsed := time.Since(start)
	p := HonestPhase{
		Offers: c.Offers.Load(), Matches: c.Matches.Load(), Denials: c.Denials.Load(),
		Timeouts: c.Timeouts.Load(), Errors: c.Errors.Load(), Missed: c.Missed.Load(),
		MatchesPerSec: float64(c.Matches.Load()) / elapsed.Seconds(),
	}
	if p.Offers > 0 {
		p.MatchRate = float64(p.Matches) / float64(p.Offers)
	}
	if after := r.brokerConnCounts(ctx); before != nil && after != nil {
		p.Broker = &BrokerConnCounts{
			Refused:         after.Refused - before.Refused,
			AcceptNoFiles:   after.AcceptNoFiles - before.AcceptNoFiles,
			AcceptOther:     after.AcceptOther - before.AcceptOther,
			GoroutinesAfter: after.GoroutinesAfter,
		}
	}
	return p
}

// clientLoop is honest client i: one offer per token, from its own address.
func (r *attackRun) clientLoop(ctx, phaseCtx context.Context, i int, tokens <-chan struct{}, c *brokerwire.StepCounters) {
	hc := r.client.ConnFrom(ctx, peerAddr(2, i))
	defer hc.Close()
	for {
		select {
		case <-phaseCtx.Done():
			return
		case <-tokens:
		}
		status, resp, err := hc.Post("/client", r.offer, messages.MaxBodySize, nil)
		if r.cfg.HonestNewConns {
			hc.Close()
		}
		if ctx.Err() != nil {
			return
		}
		c.Offers.Add(1)
		if err != nil || status != http.StatusOK {
			c.Errors.Add(1)
			r.errs.Add(brokerwire.HTTPErrorText("honest client", status, err))
			continue
		}
		cr, err := messages.DecodeClientPollResponse(resp)
		switch {
		case err != nil:
			c.Errors.Add(1)
			r.errs.Add("honest client response: " + err.Error())
		case cr.Answer != "":
			c.Matches.Add(1)
		case cr.Error == messages.StrNoProxies:
			c.Denials.Add(1)
		case cr.Error == messages.StrTimedOut:
			c.Timeouts.Add(1)
		default:
			c.Errors.Add(1)
			r.errs.Add(fmt.Sprintf("honest client: broker error %q", cr.Error))
		}
	}
}

// proxyLoop is honest proxy i, from its own address: poll, answer every
// offer a WebRTC proxy could answer, poll again at once.
func (r *attackRun) proxyLoop(ctx context.Context, i int) {
	pattern := ""
	pollT, err := brokerwire.NewSidTemplate(func(sid string) ([]byte, error) {
		return messages.ProxyPollRequest{Sid: sid, Type: messages.ProxyTypeStandalone, NAT: messages.NATUnrestricted, AcceptedRelayPattern: &pattern}.Encode()
	})
	if err != nil {
		r.errs.Add("proxy poll template: " + err.Error())
		return
	}
	ans, err := brokerwire.AnswerTemplate()
	if err != nil {
		r.errs.Add("answer template: " + err.Error())
		return
	}
	hc := r.client.ConnFrom(ctx, peerAddr(1, i))
	defer hc.Close()
	var sid [brokerwire.SidLength]byte
	for first := true; ctx.Err() == nil; first = false {
		if !first && r.cfg.ProxyInterval > 0 {
			sleep.For(ctx, r.cfg.ProxyInterval)
		}
		brokerwire.FillSid(&sid)
		if r.cfg.HonestNewConns {
			hc.Close()
		}
		status, resp, err := hc.Post("/proxy", pollT.With(&sid), messages.MaxBodySize, nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil || status != http.StatusOK {
			r.errs.Add(brokerwire.HTTPErrorText("honest proxy poll", status, err))
			sleep.For(ctx, 100*time.Millisecond)
			continue
		}
		poll, err := messages.DecodeProxyPollResponse(resp)
		if err != nil {
			r.errs.Add("honest proxy poll response: " + err.Error())
			sleep.For(ctx, 100*time.Millisecond)
			continue
		}
		if poll.Status != messages.StatusClientMatch {
			continue
		}
		r.proxyMatches.Add(1)
		if !answerable(poll.Offer) {
			r.unanswerable.Add(1) // a real proxy fails here and sends nothing
			continue
		}
		status, resp, err = hc.Post("/answer", ans.With(&sid), messages.MaxBodySize, nil)
		if ctx.Err() != nil {
			return
		}
		if err != nil || status != http.StatusOK {
			r.errs.Add(brokerwire.HTTPErrorText("honest proxy answer", status, err))
			continue
		}
		if a, err := messages.DecodeProxyAnswerResponse(resp); err == nil && a.Status != messages.StatusSuccess {
			r.answersGone.Add(1)
		}
	}
}

// answerable reports whether a WebRTC proxy could answer offer: a session
// description of type offer whose SDP has a data channel section, ICE
// credentials and a DTLS fingerprint (a quick textual check, not a full
// parse; the offers of this run are either the fixed one or junk).
func answerable(offer string) bool {
	d, err := messages.DecodeSessionDescription(offer)
	if err != nil || d.Type != messages.SDPTypeOffer {
		return false
	}
	for _, want := range []string{"\nm=application ", "\na=ice-ufrag:", "\na=ice-pwd:", "\na=fingerprint:"} {
		if !strings.Contains(d.SDP, want) {
			return false
		}
	}
	return true
}

// junkOffers are the attacker's poll requests in AttackJunkOffers, used in
// turn: the offer, and one that is SDP but has no ICE credentials.
func junkOffers(fingerprint string) ([][]byte, error) {
	noICE := strings.Replace(strings.Replace(brokerwire.FixedOffer, `a=ice-ufrag:YOnMbdqrylXCBgky\r\n`, "", 1), `a=ice-pwd:IYWuAAHWDdajDPbUHlaNagGbuaidIqxw\r\n`, "", 1)
	var out [][]byte
	for _, o := range []string{`{"type":"offer","sdp":"x"}`, noICE} {
		b, err := messages.ClientPollRequest{Offer: o, NAT: messages.NATUnknown, Fingerprint: fingerprint}.Encode()
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// runAttack runs the attacker's connections until cfg.Requests requests
// in all have been sent or phaseCtx ends, then fills in counts.
func (r *attackRun) runAttack(phaseCtx context.Context, counts *AttackerCounts) {
	var junk [][]byte
	if r.cfg.Attack == AttackJunkOffers {
		var err error
		if junk, err = junkOffers(r.cfg.Fingerprint); err != nil {
			r.errs.Add("junk offers: " + err.Error())
			return
		}
	}
	var (
		next                                     atomic.Int64
		sent, limited, refused, matched, failure atomic.Int64
		wg                                       sync.WaitGroup
	)
	start := time.Now()
	var tokens chan struct{}
	if r.cfg.AttackRate > 0 {
		tokens = make(chan struct{}, r.cfg.Concurrency)
		var missed atomic.Int64 // due while every connection was busy: not sent
		wg.Go(func() { measure.Pace(phaseCtx, r.cfg.AttackRate, tokens, &missed) })
	}
	for range r.cfg.Concurrency {
		wg.Go(func() {
			hc := r.client.ConnFrom(phaseCtx, r.attacker)
			defer hc.Close()
			for phaseCtx.Err() == nil {
				if tokens != nil {
					select {
					case <-phaseCtx.Done():
						return
					case <-tokens:
					}
				}
				n := next.Add(1)
				if n > int64(r.cfg.Requests) {
					return
				}
				var (
					status int
					resp   []byte
					err    error
				)
				if junk != nil {
					status, resp, err = hc.Post("/client", junk[n%int64(len(junk))], messages.MaxBodySize, nil)
				} else {
					status, resp, err = hc.Get("/amp/client/"+amp.EncodePath(r.offer), 2*messages.MaxBodySize)
				}
				if phaseCtx.Err() != nil && err != nil {
					return
				}
				sent.Add(1)
				switch {
				case err != nil || status >= 500:
					failure.Add(1)
				case status == http.StatusTooManyRequests:
					limited.Add(1)
				case status != http.StatusOK:
					refused.Add(1)
				case r.attackMatched(resp, junk == nil):
					matched.Add(1)
				default:
					refused.Add(1)
				}
			}
		})
	}
	wg.Wait() // the pacer runs to the end of the phase
	*counts = AttackerCounts{
		Sent: sent.Load(), Seconds: measure.Seconds(time.Since(start)), RateLimited: limited.Load(),
		Refused: refused.Load(), Matched: matched.Load(), Errors: failure.Load(),
	}
}

// attackMatched reports whether an attack response carried a proxy's
// answer; AMP responses are armored in a page.
func (r *attackRun) attackMatched(resp []byte, armored bool) bool {
	if armored {
		dec, err := amp.NewArmorDecoder(bytes.NewReader(resp))
		if err != nil {
			return false
		}
		if resp, err = io.ReadAll(io.LimitReader(dec, messages.MaxBodySize)); err != nil {
			return false
		}
	}
	cr, err := messages.DecodeClientPollResponse(resp)
	return err == nil && cr.Answer != ""
}

// WriteBrokerAttack writes a's table (Result.WriteTable).
func WriteBrokerAttack(w io.Writer, a *BrokerAttackResult) {
	fmt.Fprintf(w, "\nbroker %s: attack %s from %s; %d honest proxies (%gs between polls), %d honest clients at %.0f offers/s, %.0fs phases\n",
		a.URL, a.Attack, a.AttackerAddr, a.Proxies, a.ProxyIntervalSeconds, a.Clients, a.ClientRate, a.PhaseSeconds)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\thonest offers\tmatched\tmatch rate\tmatches/s\tdenials\ttimeouts\terrors\tbroker: refused conns\taccept EMFILE\t")
	for _, p := range []struct {
		name string
		h    HonestPhase
	}{{"baseline", a.Baseline}, {"attack", a.Flood}} {
		refused, noFiles := "-", "-"
		if b := p.h.Broker; b != nil {
			refused, noFiles = fmt.Sprint(b.Refused), fmt.Sprint(b.AcceptNoFiles)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%.1f\t%d\t%d\t%d\t%s\t%s\t\n", p.name, p.h.Offers, p.h.Matches, 100*p.h.MatchRate, p.h.MatchesPerSec, p.h.Denials, p.h.Timeouts, p.h.Errors, refused, noFiles)
	}
	tw.Flush()
	at := a.Attacker
	fmt.Fprintf(w, "honest match rate during the attack: %.1f%% of the baseline; honest matches per second: %.1f%% of the baseline\n", 100*a.MatchRateRatio, 100*a.MatchesPerSecRatio)
	if f := at.Flood; f != nil {
		fmt.Fprintf(w, "attacker: %d connection attempts in %.1fs from %d addresses (%d workers each): %d opened, %d closed at once (refused), %d closed later, %d failed dials; held at most %d, %.0f on average\n",
			at.Sent, at.Seconds, len(f.Addrs), f.ConnsPerAddr, f.Opened, f.ClosedAtOnce, f.ClosedLater, f.DialErrors, f.PeakHeld, f.MeanHeld)
	} else {
		fmt.Fprintf(w, "attacker: %d requests in %.1fs: %d rate-limited (429), %d refused, %d matched with a proxy, %d errors\n",
			at.Sent, at.Seconds, at.RateLimited, at.Refused, at.Matched, at.Errors)
	}
	fmt.Fprintf(w, "honest proxies: %d matches, %d offers they could not answer (a strike each), %d answers too late (client gone)\n",
		a.ProxyMatches, a.UnanswerableOffers, a.ProxyAnswersGone)
	measure.WriteErrors(w, a.ErrorSamples)
}

// floodDefaults fills in and checks the connection flood's fields.
func (cfg *BrokerAttackConfig) floodDefaults() error {
	if len(cfg.FloodAddrs) == 0 {
		cfg.FloodAddrs = DefaultFloodAddrs
	}
	cfg.FloodAddrs = append([]string(nil), cfg.FloodAddrs...)
	if cfg.ConnsPerAddr == 0 {
		cfg.ConnsPerAddr = DefaultFloodConnsPerAddr
	}
	if cfg.ConnsPerAddr < 1 || cfg.ConnsPerAddr > maxFloodConnsPerAddr {
		return fmt.Errorf("%w: connections per address %d out of range 1..%d", measure.ErrInvalidConfig, cfg.ConnsPerAddr, maxFloodConnsPerAddr)
	}
	if len(cfg.FloodAddrs) > 16 {
		return fmt.Errorf("%w: at most 16 flood addresses (a few addresses is the attack)", measure.ErrInvalidConfig)
	}
	for _, s := range cfg.FloodAddrs {
		a, err := netip.ParseAddr(s)
		if err != nil || !attackerAddrOK(a) {
			return fmt.Errorf("%w: flood address %q: want an IPv4 loopback address outside 127.1.0.0/16 and 127.2.0.0/16 (the honest peers')", measure.ErrInvalidConfig, s)
		}
	}
	return nil
}

// connFlood counts one connection flood's connections.
type connFlood struct {
	attempts, opened, atOnce, later, dialErrs, held atomic.Int64
}

// runConnFlood runs the connection flood until phaseCtx ends or
// cfg.Requests connections have been attempted, then fills in counts.
func (r *attackRun) runConnFlood(phaseCtx context.Context, counts *AttackerCounts) {
	var (
		f  connFlood
		wg sync.WaitGroup
	)
	start := time.Now()
	for _, s := range r.cfg.FloodAddrs {
		src := netip.MustParseAddr(s) // checked by floodDefaults
		d := *r.client.Dialer
		d.Timeout = floodDialTimeout
		d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
		measure.BindLate(&d)
		for range r.cfg.ConnsPerAddr {
			wg.Go(func() { r.floodFrom(phaseCtx, &d, &f) })
		}
	}
	// Sample how many are held until the workers are done.
	done := make(chan struct{})
	var peak, sum, n int64
	var sampler sync.WaitGroup
	sampler.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h := f.held.Load()
				peak, sum, n = max(peak, h), sum+h, n+1
			}
		}
	})
	wg.Wait()
	close(done)
	sampler.Wait()
	fc := &ConnFloodCounts{
		Addrs: r.cfg.FloodAddrs, ConnsPerAddr: r.cfg.ConnsPerAddr,
		Opened: f.opened.Load(), ClosedAtOnce: f.atOnce.Load(), ClosedLater: f.later.Load(), DialErrors: f.dialErrs.Load(),
		PeakHeld: peak,
	}
	if n > 0 {
		fc.MeanHeld = float64(sum) / float64(n)
	}
	*counts = AttackerCounts{
		Sent: f.opened.Load() + f.dialErrs.Load(), Seconds: measure.Seconds(time.Since(start)),
		Refused: f.atOnce.Load(), Errors: f.dialErrs.Load(), Flood: fc,
	}
}

// floodFrom opens connections with d one after the other, each held until
// the broker closes it, until phaseCtx ends or cfg.Requests have been
// attempted in all.
func (r *attackRun) floodFrom(phaseCtx context.Context, d *net.Dialer, f *connFlood) {
	var buf [1]byte
	for phaseCtx.Err() == nil && f.attempts.Add(1) <= int64(r.cfg.Requests) {
		conn, err := d.DialContext(phaseCtx, "tcp", r.client.Addr)
		if err != nil {
			if phaseCtx.Err() != nil {
				return
			}
			f.dialErrs.Add(1)
			r.errs.Add("flood dial: " + err.Error())
			sleep.For(phaseCtx, floodRetryPause)
			continue
		}
		f.opened.Add(1)
		f.held.Add(1)
		t0 := time.Now()
		stop := context.AfterFunc(phaseCtx, func() { conn.Close() })
		_, err = conn.Read(buf[:]) // the broker sends nothing before a request
		stop()
		conn.Close()
		f.held.Add(-1)
		if phaseCtx.Err() != nil {
			return
		}
		if time.Since(t0) < floodRefusedWithin {
			f.atOnce.Add(1)
			if !errors.Is(err, net.ErrClosed) {
				sleep.For(phaseCtx, floodRetryPause)
			}
		} else {
			f.later.Add(1)
		}
	}
}

// brokerConnCounts scrapes cfg.MetricsURL; nil without one or on error
// (which is recorded).
func (r *attackRun) brokerConnCounts(ctx context.Context) *BrokerConnCounts {
	if r.cfg.MetricsURL == "" {
		return nil
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	// A broker out of file descriptors may not answer at once.
	fams, err := brokerwire.ScrapeMetrics(ctx, client, r.cfg.MetricsURL)
	for try := 0; err != nil && try < 5 && sleep.For(ctx, time.Second); try++ {
		fams, err = brokerwire.ScrapeMetrics(ctx, client, r.cfg.MetricsURL)
	}
	if err != nil {
		r.errs.Add("broker metrics: " + err.Error())
		return nil
	}
	c := &BrokerConnCounts{
		Refused:         brokerwire.SumFamily(fams["flurry_broker_connections_refused_total"]),
		GoroutinesAfter: brokerwire.SumFamily(fams["go_goroutines"]),
	}
	for _, m := range fams["flurry_broker_accept_errors_total"].GetMetric() {
		if labelValue(m, "error") == "no_files" {
			c.AcceptNoFiles += m.GetCounter().GetValue()
		} else {
			c.AcceptOther += m.GetCounter().GetValue()
		}
	}
	return c
}
