package proxy

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/pacing"
	"github.com/flurrypt/flurry/common/relaypattern"
	"github.com/flurrypt/flurry/messages"
)

// Defaults applied by New to zero Config fields.
const (
	DefaultPollInterval       = 5 * time.Second
	DefaultMinPollInterval    = 1 * time.Second
	DefaultMaxPollInterval    = time.Hour
	DefaultBackoffMax         = 10 * time.Minute
	DefaultNATRetestInterval  = 24 * time.Hour
	DefaultSummaryInterval    = time.Hour
	DefaultAnswerTimeout      = 3 * time.Second
	DefaultDataChannelTimeout = 20 * time.Second
	DefaultInactivityTimeout  = 30 * time.Second
	DefaultRelayDialTimeout   = 10 * time.Second
	DefaultBrokerTimeout      = 30 * time.Second
	DefaultRelayRecheck       = 24 * time.Hour
	DefaultRelayRetry         = 5 * time.Minute
	DefaultNATProbeTimeout    = 20 * time.Second
	DefaultMaxMessageSize     = 64 << 10
)

// Resolver looks up the addresses of a host name; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Config configures a Proxy. The zero value of every field but BrokerURL
// works; New copies the Config and never modifies the caller's.
type Config struct {
	// BrokerURL is the broker's base URL; "proxy" and "answer" are
	// resolved against it. Required. Tor's Snowflake network:
	// https://snowflake-broker.torproject.net/
	BrokerURL string
	// RelayURL is the default relay, used when the broker names none. Its
	// reachability is checked before the first poll. Empty: serve only
	// clients for which the broker names a relay.
	RelayURL string
	// AllowedRelayPattern is checked against every relay URL: its hostname
	// part is sent to the broker as AcceptedRelayPattern (common/relaypattern
	// syntax; it must end with '$'), and an optional ":ports" part before
	// the '$' lists the ports allowed ("relay.example:443,8443$", ":*" for
	// any); without it only port 443 (80 for ws://) is. Empty: RelayURL's
	// hostname followed by "$" (for wss://snowflake.torproject.net/ that is
	// Snowflake's default "snowflake.torproject.net$"), with RelayURL's port
	// if it names another; without RelayURL it must be set. See
	// relayports.go.
	AllowedRelayPattern string
	// AllowNonTLSRelay permits ws:// relays.
	AllowNonTLSRelay bool
	// AllowPrivateRelay permits relays whose addresses are private,
	// loopback or otherwise local (common/sdp.IsLocal).
	AllowPrivateRelay bool
	// Resolver resolves relay host names; nil means a net.Resolver.
	Resolver Resolver
	// RelayDialContext opens the TCP connection to a relay address
	// (always a literal IP and port); nil means a net.Dialer.
	RelayDialContext func(ctx context.Context, network, addr string) (net.Conn, error)
	// RelayTLSConfig is used for wss:// relays; nil means the system roots.
	RelayTLSConfig *tls.Config

	// ProxyType is sent to the broker as Type; empty means "standalone".
	ProxyType string
	// Capacity is the most clients served at once; 0 means unlimited.
	Capacity int

	// STUNURLs are the ICE servers used to learn the proxy's public
	// address, such as "stun:stun.l.google.com:19302". Empty: no STUN,
	// host candidates only.
	STUNURLs []string
	// KeepLocalAddresses keeps private and loopback candidates in answers.
	KeepLocalAddresses bool
	// OutboundAddress, if set, replaces the address of host candidates in
	// answers (for a host whose public address is not on an interface).
	OutboundAddress string
	// PortMin and PortMax bound the UDP ports used for WebRTC; both zero
	// means any port.
	PortMin, PortMax uint16
	// LoopbackOnly restricts WebRTC to loopback addresses and keeps
	// loopback candidates: for tests and demos on one machine.
	LoopbackOnly bool
	// CovertDTLS shapes the DTLS ClientHello (Snowflake's
	// -covertdtls-config and -covertdtls-fingerprint); the zero value is
	// pion's own hello, which censors block by its fingerprint: flurry-proxy
	// defaults to covertdtls.Mimic. The proxy answers, so it is the DTLS
	// client of every client connection: this is the hello a censor sees.
	CovertDTLS covertdtls.Config
	// ConfigureSettingEngine, if set, is called last on the pion
	// SettingEngine used for every peer connection.
	ConfigureSettingEngine func(*webrtc.SettingEngine)
	// Pacers is the Registry whose Pacers space out what the proxy's
	// WebRTC sockets send to each client (package pacing); nil means a
	// Registry of the proxy's own. Give one when ConfigureSettingEngine
	// hands pion a socket of its own (a UDPMux's), wrapped with
	// Registry.PacketConn, so that it is paced too.
	Pacers *pacing.Registry
	// MaxMessageSize is the largest DataChannel message accepted from a
	// client, and advertised in answers; 0 means DefaultMaxMessageSize.
	MaxMessageSize int

	// NATProbeURL is the NAT probe server (Snowflake's probetest protocol,
	// or flurry-natprobe). Empty: no probe, the NAT type stays unknown.
	// Tor's Snowflake network: https://snowflake-broker.torproject.net:8443/probe
	NATProbeURL string
	// NATRetestInterval is the time between NAT probes; 0 means
	// DefaultNATRetestInterval, negative means probe only at start.
	NATRetestInterval time.Duration
	// NATProbeTimeout bounds one probe's wait for the DataChannel to open;
	// 0 means DefaultNATProbeTimeout.
	NATProbeTimeout time.Duration

	// PollInterval is the time between polls when the broker gives no
	// NextPoll, and the first error back-off; 0 means DefaultPollInterval.
	PollInterval time.Duration
	// MinPollInterval and MaxPollInterval clamp the broker's NextPoll.
	MinPollInterval, MaxPollInterval time.Duration
	// BackoffMax caps the error back-off; 0 means DefaultBackoffMax.
	BackoffMax time.Duration
	// BrokerTimeout bounds one broker request, long-poll included.
	BrokerTimeout time.Duration
	// HTTPClient is used for broker and NAT probe requests. Nil means a
	// client with its own transport (never http.DefaultTransport).
	HTTPClient *http.Client

	// AnswerTimeout bounds ICE gathering before the answer is sent with the
	// candidates found so far.
	AnswerTimeout time.Duration
	// DataChannelTimeout bounds the wait for the client's DataChannel after
	// the answer is sent.
	DataChannelTimeout time.Duration
	// InactivityTimeout ends a session in which no byte moved either way.
	InactivityTimeout time.Duration
	// RelayDialTimeout bounds the relay's TCP, TLS and WebSocket handshake.
	RelayDialTimeout time.Duration
	// RelayRecheckInterval is how often a reachable default relay is
	// checked again; RelayRetryInterval the first wait after a failed
	// check (doubling up to RelayRecheckInterval).
	RelayRecheckInterval, RelayRetryInterval time.Duration

	// SummaryInterval is the time between summary log lines; 0 means
	// DefaultSummaryInterval, negative disables them.
	SummaryInterval time.Duration
	// MetricsAddress, if set, is a host:port on which Run serves the
	// Prometheus metrics at /internal/metrics.
	MetricsAddress string

	// Logger receives the proxy's log; nil discards it.
	Logger *slog.Logger
}

// settings is a validated Config with defaults filled in.
type settings struct {
	Config
	brokerPoll, brokerAnswer *url.URL
	relay                    *url.URL // RelayURL, if set
	pattern                  relaypattern.Pattern
	relayPorts               portSet
	natProbe                 *url.URL
	outbound                 netip.Addr
}

func durationDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// settle fills defaults, checks cfg and parses each of its values once.
func (cfg Config) settle() (*settings, error) {
	s := &settings{Config: cfg}
	s.STUNURLs = append([]string(nil), cfg.STUNURLs...)
	if s.BrokerURL == "" {
		return nil, fmt.Errorf("%w: no broker URL", ErrInvalidConfig)
	}
	base, err := url.Parse(s.BrokerURL)
	if err != nil || (base.Scheme != "https" && base.Scheme != "http") || base.Host == "" {
		return nil, fmt.Errorf("%w: broker URL %q must be an http(s) URL", ErrInvalidConfig, s.BrokerURL)
	}
	s.brokerPoll = base.ResolveReference(&url.URL{Path: "proxy"})
	s.brokerAnswer = base.ResolveReference(&url.URL{Path: "answer"})

	if s.RelayURL != "" {
		if s.relay, err = url.Parse(s.RelayURL); err != nil || s.relay.Hostname() == "" {
			return nil, fmt.Errorf("%w: relay URL %q", ErrInvalidConfig, s.RelayURL)
		}
	}
	rule := s.AllowedRelayPattern
	if rule == "" {
		if s.relay == nil {
			return nil, fmt.Errorf("%w: set a relay URL or an allowed relay pattern", ErrInvalidConfig)
		}
		rule = defaultRelayRule(s.relay)
	}
	if !strings.HasSuffix(rule, "$") {
		return nil, fmt.Errorf("%w: relay pattern %q must end with $", ErrInvalidConfig, rule)
	}
	if rule, s.relayPorts, err = splitRelayPattern(rule); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if s.relay != nil {
		// The default relay's port was named by the operator: a Snowflake
		// command line (-relay wss://host:8443/ with a pattern that names
		// no port) keeps working.
		s.relayPorts = s.relayPorts.withRelayPort(s.relay)
	}
	s.AllowedRelayPattern = rule // the hostname part, for the broker
	if s.pattern, err = relaypattern.Parse(rule); err != nil {
		return nil, fmt.Errorf("%w: relay pattern: %w", ErrInvalidConfig, err)
	}
	if s.relay != nil {
		if err := s.policy().checkParsedURL(s.relay); err != nil {
			return nil, fmt.Errorf("%w: default relay: %w", ErrInvalidConfig, err)
		}
	}

	if s.ProxyType == "" {
		s.ProxyType = messages.ProxyTypeStandalone
	}
	if s.Capacity < 0 {
		return nil, fmt.Errorf("%w: negative capacity", ErrInvalidConfig)
	}
	if err := s.CovertDTLS.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	for _, u := range s.STUNURLs {
		if !strings.HasPrefix(u, "stun:") && !strings.HasPrefix(u, "stuns:") {
			return nil, fmt.Errorf("%w: ICE server %q is not a stun: URL", ErrInvalidConfig, u)
		}
	}
	if s.OutboundAddress != "" {
		if s.KeepLocalAddresses {
			return nil, fmt.Errorf("%w: outbound address and keep-local-addresses exclude each other", ErrInvalidConfig)
		}
		if s.outbound, err = netip.ParseAddr(s.OutboundAddress); err != nil {
			return nil, fmt.Errorf("%w: outbound address %q is not an IP address", ErrInvalidConfig, s.OutboundAddress)
		}
	}
	if (s.PortMin == 0) != (s.PortMax == 0) || s.PortMin > s.PortMax {
		return nil, fmt.Errorf("%w: port range %d:%d", ErrInvalidConfig, s.PortMin, s.PortMax)
	}
	if s.MaxMessageSize == 0 {
		s.MaxMessageSize = DefaultMaxMessageSize
	}
	if s.MaxMessageSize < copyBufferSize {
		return nil, fmt.Errorf("%w: max message size below %d", ErrInvalidConfig, copyBufferSize)
	}

	if s.NATProbeURL != "" {
		if s.natProbe, err = url.Parse(s.NATProbeURL); err != nil || (s.natProbe.Scheme != "https" && s.natProbe.Scheme != "http") {
			return nil, fmt.Errorf("%w: NAT probe URL %q must be an http(s) URL", ErrInvalidConfig, s.NATProbeURL)
		}
	}
	durationDefault(&s.NATRetestInterval, DefaultNATRetestInterval)
	durationDefault(&s.NATProbeTimeout, DefaultNATProbeTimeout)
	durationDefault(&s.PollInterval, DefaultPollInterval)
	durationDefault(&s.MinPollInterval, DefaultMinPollInterval)
	durationDefault(&s.MaxPollInterval, DefaultMaxPollInterval)
	durationDefault(&s.BackoffMax, DefaultBackoffMax)
	durationDefault(&s.BrokerTimeout, DefaultBrokerTimeout)
	durationDefault(&s.AnswerTimeout, DefaultAnswerTimeout)
	durationDefault(&s.DataChannelTimeout, DefaultDataChannelTimeout)
	durationDefault(&s.InactivityTimeout, DefaultInactivityTimeout)
	durationDefault(&s.RelayDialTimeout, DefaultRelayDialTimeout)
	durationDefault(&s.RelayRecheckInterval, DefaultRelayRecheck)
	durationDefault(&s.RelayRetryInterval, DefaultRelayRetry)
	durationDefault(&s.SummaryInterval, DefaultSummaryInterval)
	for _, d := range []time.Duration{s.PollInterval, s.MinPollInterval, s.MaxPollInterval, s.BackoffMax,
		s.BrokerTimeout, s.AnswerTimeout, s.DataChannelTimeout, s.InactivityTimeout, s.RelayDialTimeout,
		s.RelayRecheckInterval, s.RelayRetryInterval, s.NATProbeTimeout} {
		if d < 0 {
			return nil, fmt.Errorf("%w: negative duration %v", ErrInvalidConfig, d)
		}
	}
	if s.MinPollInterval > s.MaxPollInterval {
		return nil, fmt.Errorf("%w: minimum poll interval above maximum", ErrInvalidConfig)
	}
	if s.Logger == nil {
		s.Logger = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// assumedClients is the capacity the port-range warning assumes of an
// unlimited proxy (docs/proxy.md).
const assumedClients = 10

// warn logs the settings that work but will likely disappoint: an
// ephemeral port range too narrow for the capacity (each client takes
// about two ports), and no way for a proxy behind a NAT to learn its
// public address.
func (s *settings) warn() {
	if s.PortMin != 0 {
		width := int(s.PortMax-s.PortMin) + 1
		clients := s.Capacity
		if clients == 0 {
			clients = assumedClients
		}
		if width < 2*clients {
			s.Logger.Warn("the ephemeral port range may be too narrow for the capacity", "ports", width, "clients", clients)
		}
	}
	if len(s.STUNURLs) == 0 && !s.KeepLocalAddresses && !s.LoopbackOnly && s.OutboundAddress == "" {
		s.Logger.Warn("no STUN server and no outbound address: answers will only carry public host candidates; behind a NAT this proxy can serve no client (each match fails with \"no public ICE candidate\")")
	}
}

// defaultRelayRule is the pattern that allows exactly the default relay's
// hostname suffix and port.
func defaultRelayRule(u *url.URL) string {
	host := u.Hostname()
	port := u.Port()
	if port == "" || port == strconv.Itoa(int(defaultPort(u.Scheme))) {
		return host + "$"
	}
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + port + "$"
}

// ParsePortRange parses the -ephemeral-ports-range flag value "min:max"
// (both between 1 and 65535, min ≤ max). The empty string means no range.
func ParsePortRange(s string) (lo, hi uint16, err error) {
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, ":")
	if !ok {
		return 0, 0, fmt.Errorf("%w: port range %q is not min:max", ErrInvalidConfig, s)
	}
	l, err1 := strconv.ParseUint(a, 10, 16)
	h, err2 := strconv.ParseUint(b, 10, 16)
	if err1 != nil || err2 != nil || l == 0 || h == 0 || l > h {
		return 0, 0, fmt.Errorf("%w: port range %q", ErrInvalidConfig, s)
	}
	return uint16(l), uint16(h), nil
}
