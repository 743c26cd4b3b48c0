package client

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/client/internal/rendezvous"
	"github.com/flurrypt/flurry/client/internal/webrtcpeer"
	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/messages"
)

// Defaults for zero Config fields.
const (
	DefaultMax      = 1
	MaxMax          = 16
	DefaultRetryMin = time.Second
	DefaultRetryMax = 10 * time.Second // Snowflake's ReconnectTimeout

	DefaultReplyTimeout = 2 * time.Second
)

// Config configures a Client. It has a field for every bridge-line option
// of Snowflake v2.14.1 (the name in parentheses); ApplyBridgeArgs fills them
// from a bridge line. The zero value is not usable on its own: a rendezvous
// method (BrokerURL) is required.
type Config struct {
	// BrokerURL is the broker's URL (url), e.g. https://broker.example/.
	BrokerURL string

	// Fronts are front domains for domain fronting (fronts, or the legacy
	// front): each rendezvous goes to a random one of them, with the
	// broker's host in the Host header.
	Fronts []string

	// AMPCacheURL is an AMP cache to rendezvous through (ampcache), e.g.
	// https://cdn.ampproject.org/. With BrokerURL (required), poll
	// requests go through the cache instead of straight to the broker;
	// Fronts then front the cache.
	AMPCacheURL string

	// SQSQueueURL and SQSCredentials select SQS rendezvous (sqsqueue,
	// sqscreds): poll requests go through the broker's Amazon SQS queue,
	// https://sqs.<region>.amazonaws.com/<account>/<queue>, with the
	// base64 credentials of package common/sqscreds. Exclusive with
	// BrokerURL and AMPCacheURL; Fronts do not apply.
	SQSQueueURL    string
	SQSCredentials string

	// NewSQSRendezvous builds the SQS rendezvous; New of package
	// github.com/flurrypt/flurry/client/sqs is the one to set. It is
	// required with SQSQueueURL, and a field rather than built in so that
	// only the programs that offer SQS link the AWS SDK.
	NewSQSRendezvous func(SQSConfig) (Rendezvous, error)

	// ICEServers are STUN and TURN URLs (ice): "stun:host[:port]",
	// "turn:user:pass@host[:port][?transport=udp|tcp]" and
	// "turns:user:pass@host[:port][?transport=tcp]" (TURN over TLS, 5349 by
	// default; put it on 443 to pass where only HTTPS does). Credentials
	// are percent-decoded. Other URLs are skipped with a warning, as
	// Snowflake does. STUN servers beyond two are halved at random as
	// Snowflake does; TURN servers are all kept (Snowflake has none).
	// TURN over TCP or TLS does not go through SOCKS5Proxy (only UDP
	// does). Empty means no ICE server: only host candidates, and the NAT
	// type stays unknown.
	ICEServers []string

	// Max is how many proxies a session keeps connected (max); zero
	// means 1. With 2 or more, every connected proxy carries traffic at
	// once and a lost proxy costs at most a retransmission.
	Max int

	// Standby keeps one more proxy connected than Max (standby): it
	// carries nothing, bar a keepalive every 10 s, until a proxy in use
	// is lost or falls quiet, and then takes over at once, without a
	// rendezvous; another is then collected to stand by. Only Flurry's
	// relay leaves a standby proxy idle (Snowflake's sends through every
	// proxy of a client), and it costs a volunteer's proxy per client.
	Standby bool

	// BridgeFingerprint is the hex fingerprint of the bridge the broker
	// should pick (fingerprint); empty means Snowflake's default bridge.
	BridgeFingerprint string

	// UTLSImitate names a TLS ClientHello to imitate for broker
	// connections (utls-imitate), e.g. hellorandomizedalpn or
	// hellochrome_auto; empty uses Go's TLS.
	UTLSImitate string

	// UTLSRemoveSNI leaves the server name out of the imitated ClientHello
	// (utls-nosni).
	UTLSRemoveSNI bool

	// CovertDTLS shapes the DTLS handshake and the ICE checks
	// (covertdtls-config, covertdtls-fingerprint); the zero value is
	// pion's own, flurry-client defaults to covertdtls.Mimic.
	CovertDTLS covertdtls.Config

	// KeepLocalAddresses offers private and loopback addresses as ICE
	// candidates (-keep-local-addresses).
	KeepLocalAddresses bool

	// SOCKS5Proxy sends all of the client's own traffic through a SOCKS5
	// proxy, "socks5://[user:pass@]host:port" (tor's TOR_PT_PROXY, set by
	// its Socks5Proxy option): broker HTTPS (plain, uTLS, fronted, AMP
	// cache and SQS) through CONNECT, and STUN and WebRTC UDP through UDP
	// ASSOCIATE, which the proxy must support. Names are resolved by the
	// proxy (a STUN server's through a Binding Request sent to its name).
	// Any other scheme is an error. Empty means no proxy.
	SOCKS5Proxy string

	// LoopbackOnly restricts WebRTC to loopback interfaces and addresses,
	// with mDNS off and no STUN (tests and demonstrations on one host).
	// ICEServers must then be empty.
	LoopbackOnly bool

	// RelayKey is the relay's public key (relay-key), standard base64 of
	// 32 bytes, as flurry-relay prints it. With it, every carrier is
	// sealed (package common/tunnelseal): no proxy can inject packets
	// into the session or pull its downstream to itself. Only a Flurry
	// relay with the matching key accepts such carriers: leave it empty
	// for Snowflake's relays.
	RelayKey string

	// Logger receives the client's logs; nil discards them. Logs carry no
	// IP address unless the handler lets them through: wrap it with
	// safelog.NewHandler.
	Logger *slog.Logger

	// Events, if not nil, receives an Event for each step of every
	// session. Sends never block: when the channel is full the event is
	// dropped.
	Events chan<- Event

	// RendezvousTimeout bounds one exchange with the broker; zero means
	// 15 s (the broker's 5 s budget plus the network), 30 s with SQS.
	RendezvousTimeout time.Duration

	// GatherTimeout bounds ICE candidate gathering; zero means 5 s.
	GatherTimeout time.Duration

	// DataChannelTimeout bounds the wait for a DataChannel to open after
	// the answer; zero means 10 s.
	DataChannelTimeout time.Duration

	// IdleTimeout drops a proxy that sends nothing for this long; zero
	// means 20 s.
	IdleTimeout time.Duration

	// DeadPeerTimeout drops a proxy that ICE has not heard from (data or
	// keepalive) for this long; from half of it a proxy that was carrying
	// data may fall quiet and its replacement be collected (docs/client.md,
	// "Fast failover"). Zero means 1 s.
	DeadPeerTimeout time.Duration

	// ReplyTimeout drops a proxy through which data went out and nothing
	// came back for this long (or for twice KCP's retransmission timeout,
	// if that is longer): a proxy that is alive to ICE but forwards
	// nothing. While the session only receives, a proxy that falls silent
	// for half of it is sent one KCP window probe, which the relay
	// answers, so that the rule applies to downloads too. Zero means 2 s.
	ReplyTimeout time.Duration

	// RetryMin and RetryMax bound the pause after a failed attempt,
	// which doubles from RetryMin to RetryMax; zero means 1 s and 10 s.
	RetryMin, RetryMax time.Duration
}

// settings is a checked Config with defaults filled in and each value
// parsed once.
type settings struct {
	Config
	broker     *url.URL              // BrokerURL, if set
	ampCache   *url.URL              // AMPCacheURL, if set
	socks5     *url.URL              // SOCKS5Proxy, if set
	iceServers []webrtc.ICEServer    // the ICEServers kept (webrtcpeer.ParseICEServers)
	stunAddrs  []string              // host:port of the kept STUN servers, for NAT probing
	skippedICE []string              // the ICEServers skipped, without credentials
	relayKey   *tunnelseal.PublicKey // RelayKey, if set
}

// settle fills defaults, checks cfg and parses its values. A Config
// without a rendezvous method settles: WithRendezvous may supply one.
func (cfg Config) settle() (*settings, error) {
	s := &settings{Config: cfg}
	s.ICEServers = append([]string(nil), cfg.ICEServers...)
	s.Fronts = append([]string(nil), cfg.Fronts...)
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	if s.Max == 0 {
		s.Max = DefaultMax
	}
	if s.Max < 1 || s.Max > MaxMax {
		return nil, fmt.Errorf("%w: max must be between 1 and %d, not %d", ErrInvalidConfig, MaxMax, s.Max)
	}
	if err := s.CovertDTLS.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if s.BridgeFingerprint == "" {
		s.BridgeFingerprint = messages.DefaultBridgeFingerprint
	}
	if _, err := messages.ParseFingerprint(s.BridgeFingerprint); err != nil {
		return nil, fmt.Errorf("%w: fingerprint: %w", ErrInvalidConfig, err)
	}
	if err := rendezvous.CheckUTLSName(s.UTLSImitate); err != nil {
		return nil, fmt.Errorf("%w: utls-imitate: %w", ErrInvalidConfig, err)
	}
	if s.LoopbackOnly && len(s.ICEServers) > 0 {
		return nil, fmt.Errorf("%w: loopback-only peers take no ICE servers", ErrInvalidConfig)
	}
	s.iceServers, s.stunAddrs, s.skippedICE = webrtcpeer.ParseICEServers(s.ICEServers)
	if s.SOCKS5Proxy != "" {
		var err error
		if s.socks5, err = parseSOCKS5Proxy(s.SOCKS5Proxy); err != nil {
			return nil, fmt.Errorf("%w: SOCKS5 proxy: %w", ErrInvalidConfig, err)
		}
		if s.LoopbackOnly && !isLoopbackHost(s.socks5.Hostname()) {
			return nil, fmt.Errorf("%w: loopback-only peers need a SOCKS5 proxy on a loopback address", ErrInvalidConfig)
		}
	}
	if s.RetryMin <= 0 {
		s.RetryMin = DefaultRetryMin
	}
	if s.RetryMax <= 0 {
		s.RetryMax = DefaultRetryMax
	}
	if s.RetryMax < s.RetryMin {
		s.RetryMax = s.RetryMin
	}
	if s.ReplyTimeout == 0 {
		s.ReplyTimeout = DefaultReplyTimeout
	}
	for _, d := range []time.Duration{s.RendezvousTimeout, s.GatherTimeout, s.DataChannelTimeout, s.IdleTimeout, s.DeadPeerTimeout, s.ReplyTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("%w: negative timeout", ErrInvalidConfig)
		}
	}
	if s.RelayKey != "" {
		k, err := tunnelseal.ParsePublicKey(s.RelayKey)
		if err != nil {
			return nil, fmt.Errorf("%w: relay-key: %w", ErrInvalidConfig, err)
		}
		s.relayKey = &k
	}
	if err := s.settleRendezvous(); err != nil {
		return nil, err
	}
	return s, nil
}

// settleRendezvous checks the rendezvous options and parses their URLs:
// sqsqueue > ampcache+url > url (Snowflake's order). The SQS values are
// parsed by the SQS rendezvous itself, and fronts by the method they
// front.
func (s *settings) settleRendezvous() error {
	if s.SQSQueueURL != "" {
		if s.BrokerURL != "" || s.AMPCacheURL != "" {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, ErrMultipleRendezvous)
		}
		if s.SQSCredentials == "" {
			return fmt.Errorf("%w: sqsqueue needs sqscreds", ErrInvalidConfig)
		}
		if s.NewSQSRendezvous == nil {
			return fmt.Errorf("%w: sqsqueue needs Config.NewSQSRendezvous: set it to New of package %s", ErrInvalidConfig, sqsPackage)
		}
		return nil
	}
	var err error
	if s.BrokerURL != "" {
		if s.broker, err = rendezvous.ParseBrokerURL(s.BrokerURL); err != nil {
			return fmt.Errorf("%w: url: %w", ErrInvalidConfig, err)
		}
	}
	if s.AMPCacheURL != "" {
		if s.BrokerURL == "" {
			return fmt.Errorf("%w: ampcache needs url", ErrInvalidConfig)
		}
		if s.ampCache, err = rendezvous.ParseCacheURL(s.AMPCacheURL); err != nil {
			return fmt.Errorf("%w: ampcache: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// sqsPackage provides Config.NewSQSRendezvous.
const sqsPackage = "github.com/flurrypt/flurry/client/sqs"

// ApplyBridgeArgs returns cfg with the options of a bridge line applied
// (tor passes them as SOCKS arguments; goptlib's pt.Args has this type).
// Keys: url, front, fronts, ampcache, sqsqueue, sqscreds, ice, max,
// fingerprint, relay-key (Flurry's own), utls-imitate, utls-nosni, covertdtls-config and
// covertdtls-fingerprint (ignored when covert DTLS is disabled). Unknown keys are ignored, as Snowflake does. Only the first
// value of a repeated key counts.
func ApplyBridgeArgs(cfg Config, args map[string][]string) (Config, error) {
	get := func(key string) (string, bool) {
		v, ok := args[key]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}
	if v, ok := get("url"); ok {
		cfg.BrokerURL = v
	}
	if v, ok := get("fronts"); ok && v != "" {
		cfg.Fronts = commalist.Split(v)
	} else if v, ok := get("front"); ok {
		cfg.Fronts = commalist.Split(v)
	}
	if v, ok := get("ampcache"); ok {
		cfg.AMPCacheURL = v
	}
	if v, ok := get("sqsqueue"); ok {
		cfg.SQSQueueURL = v
	}
	if v, ok := get("sqscreds"); ok {
		cfg.SQSCredentials = v
	}
	if v, ok := get("ice"); ok {
		cfg.ICEServers = commalist.Split(v)
	}
	if v, ok := get("max"); ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			return cfg, fmt.Errorf("%w: max: not an integer", ErrInvalidConfig)
		}
		cfg.Max = n
	}
	if v, ok := get("standby"); ok {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return cfg, fmt.Errorf("%w: standby: not true or false", ErrInvalidConfig)
		}
		cfg.Standby = b
	}
	if v, ok := get("relay-key"); ok {
		cfg.RelayKey = v
	}
	if v, ok := get("fingerprint"); ok {
		cfg.BridgeFingerprint = v
	}
	if v, ok := get("utls-imitate"); ok {
		cfg.UTLSImitate = v
	}
	if v, ok := get("utls-nosni"); ok {
		v = strings.ToLower(v)
		cfg.UTLSRemoveSNI = v == "true" || v == "yes"
	}
	mode, fp := cfg.CovertDTLS.Mode.String(), cfg.CovertDTLS.Fingerprint
	if v, ok := get("covertdtls-config"); ok {
		mode = v
	}
	if v, ok := get("covertdtls-fingerprint"); ok {
		fp = v
	}
	c, err := covertdtls.Parse(mode, fp)
	if err != nil {
		return cfg, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	cfg.CovertDTLS = c
	return cfg, nil
}
