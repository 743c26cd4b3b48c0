package relay

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"time"

	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
)

// DialFunc connects one client stream to its destination (tor's ORPort or
// ExtORPort, or any TCP service). client is the client's IP address as the
// proxy reported it (the client_ip query parameter); it is the zero Addr
// when unknown.
type DialFunc func(ctx context.Context, client netip.Addr) (net.Conn, error)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultListenAddr         = "127.0.0.1:8000"
	DefaultHandshakeTimeout   = 10 * time.Second
	DefaultTokenTimeout       = 5 * time.Second
	DefaultCarrierIdleTimeout = 2 * time.Minute
	DefaultMaxConns           = 100000
	DefaultMaxSessions        = 20000
	DefaultMaxCarriersPerAddr = 1000
	// DefaultMaxCarriersPerClient is what a multipath client needs: a
	// Flurry client keeps up to 16 proxies (client.MaxMax), plus a few
	// that are replacing dying ones.
	DefaultMaxCarriersPerClient = 20
	DefaultNewSessionRate       = 5.0
	DefaultNewSessionBurst      = 50
	DefaultSessionOpenTimeout   = 5 * time.Second
	DefaultDialTimeout          = 10 * time.Second
	DefaultShutdownTimeout      = 5 * time.Second
	// DefaultClientTimeout is how long a ClientID's outgoing packet queue
	// lives without traffic (Snowflake's clientMapTimeout).
	DefaultClientTimeout = time.Minute
	// DefaultAbandonTimeout is how long a session lives without a carrier:
	// smux's keep-alive timeout, the least Snowflake's server keeps a
	// session whose client went silent.
	DefaultAbandonTimeout = turbotunnel.RelayKeepAliveTimeout
)

// Config configures a Relay. The zero value listens on DefaultListenAddr
// without TLS but has no forwarding target: set ForwardAddr, Backends or
// Dial.
type Config struct {
	// ListenAddr is the TCP address Run listens on. Default
	// DefaultListenAddr. Serve ignores it.
	ListenAddr string
	// TLSConfig, if not nil, makes Serve and Run speak TLS (wss://). It
	// needs a certificate or GetCertificate. HTTP/2 is never offered: a
	// WebSocket needs HTTP/1.1.
	TLSConfig *tls.Config
	// Path, if not empty, is the only URL path that accepts WebSockets;
	// others get 404. Empty accepts every path, as Snowflake does.
	Path string

	// ForwardAddr is the TCP address each stream is forwarded to when Dial
	// is nil (standalone mode).
	ForwardAddr string
	// Dial, if not nil, connects each stream (for example TorDialer for
	// tor's ExtORPort). It overrides ForwardAddr.
	Dial DialFunc
	// DialTimeout bounds each Dial. Default DefaultDialTimeout.
	DialTimeout time.Duration

	// Backends, if not empty, are the targets streams are balanced over
	// (least open streams first, failed backends out of rotation and
	// retried with back-off, health checks every BackendCheckInterval).
	// It excludes Dial and ForwardAddr.
	Backends []Backend
	// Transport is the name sent in the ExtORPort TRANSPORT command to
	// ExtORPort backends. Default "snowflake".
	Transport string
	// BackendCheckInterval is how often a healthy backend is probed.
	// Default DefaultBackendCheckInterval.
	BackendCheckInterval time.Duration

	// NumTurbotunnel is the number of KCP state machines; clients are
	// spread over them by a keyed hash of their ClientID. Default
	// runtime.NumCPU().
	NumTurbotunnel int
	// MaxConns caps concurrent WebSocket connections (carriers); an upgrade
	// request beyond it gets 503. Default DefaultMaxConns; negative means
	// no limit.
	MaxConns int
	// HandshakeTimeout bounds the TLS handshake and the HTTP upgrade
	// request (Serve's header and read timeouts). Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// TokenTimeout bounds the token and ClientID that follow the upgrade.
	// Default DefaultTokenTimeout.
	TokenTimeout time.Duration

	// TrustedProxies lists reverse proxies or CDNs in front of the relay
	// whose Forwarded and X-Forwarded-For headers are believed: the
	// per-address limits then key on the forwarded address. From any
	// other peer the headers are ignored and the TCP peer is the key. As
	// the broker's -trusted-proxies.
	TrustedProxies []netip.Prefix
	// MaxCarriersPerAddr caps concurrent connections from one peer address
	// (an IPv6 /64); beyond it a connection is closed, or an upgrade
	// request gets 503. A proxy holds one carrier per client it serves.
	// Default DefaultMaxCarriersPerAddr; negative means no limit.
	MaxCarriersPerAddr int
	// NewSessionRate and NewSessionBurst are the token bucket of new KCP
	// sessions per peer address: a carrier whose first packet would start
	// a session beyond it is closed. Defaults DefaultNewSessionRate (per
	// second) and DefaultNewSessionBurst; a negative rate means no limit.
	NewSessionRate  float64
	NewSessionBurst int
	// MaxCarriersPerClient caps the concurrent carriers of one ClientID
	// whose carriers are not sealed (Snowflake's protocol): a proxy that
	// learnt the ClientID can add carriers only up to it. Default
	// DefaultMaxCarriersPerClient; negative means no limit.
	MaxCarriersPerClient int
	// RelayKey, if not nil, is the relay's X25519 private key: carriers
	// that prove a session key derived from it (package
	// common/tunnelseal; clients get the public key as the bridge-line
	// argument relay-key) are accepted, their packets authenticated and
	// encrypted. Snowflake carriers are accepted with or without it.
	RelayKey *tunnelseal.PrivateKey
	// MaxSessions caps live KCP sessions; a carrier whose first packet
	// would start one more is closed. Default DefaultMaxSessions;
	// negative means no limit.
	MaxSessions int
	// SessionOpenTimeout closes a session that has opened no stream and
	// has no carrier after this long (with a carrier, after six times
	// this). Default DefaultSessionOpenTimeout.
	SessionOpenTimeout time.Duration
	// CarrierIdleTimeout closes a carrier that has received nothing for
	// this long (Snowflake clients send smux keepalives every 10 s).
	// Default DefaultCarrierIdleTimeout.
	CarrierIdleTimeout time.Duration
	// ClientTimeout is how long a ClientID's outgoing queue outlives its
	// last packet; a session whose ClientID has had no carrier for this
	// long goes silent (docs/relay.md, "Clients that vanish"). Default
	// DefaultClientTimeout.
	ClientTimeout time.Duration
	// AbandonTimeout closes a session whose ClientID has had no carrier
	// for this long. Default DefaultAbandonTimeout.
	AbandonTimeout time.Duration
	// ShutdownTimeout bounds the graceful part of Serve's shutdown.
	// Default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// MetricsAddr, if not empty, is where Run serves Prometheus metrics
	// (path /metrics).
	MetricsAddr string

	// Logger receives the relay's logs; nil discards them. It is not
	// scrubbed here: the binary installs safelog.
	Logger *slog.Logger
}

// settings is a checked Config with defaults filled in. The relay's values
// arrive parsed (netip.Prefix, *tls.Config, DialFunc), so it adds no
// field of its own.
type settings struct {
	Config
}

// settle fills defaults and checks cfg.
func (cfg Config) settle() (*settings, error) {
	if cfg.ListenAddr == "" {
		cfg.ListenAddr = DefaultListenAddr
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	if cfg.NumTurbotunnel == 0 {
		cfg.NumTurbotunnel = runtime.NumCPU()
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if cfg.TokenTimeout == 0 {
		cfg.TokenTimeout = DefaultTokenTimeout
	}
	if cfg.MaxSessions == 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.MaxCarriersPerAddr == 0 {
		cfg.MaxCarriersPerAddr = DefaultMaxCarriersPerAddr
	}
	if cfg.MaxCarriersPerClient == 0 {
		cfg.MaxCarriersPerClient = DefaultMaxCarriersPerClient
	}
	if cfg.RelayKey != nil {
		k := *cfg.RelayKey
		cfg.RelayKey = &k
	}
	if cfg.NewSessionRate == 0 {
		cfg.NewSessionRate = DefaultNewSessionRate
	}
	if cfg.NewSessionBurst == 0 {
		cfg.NewSessionBurst = DefaultNewSessionBurst
	}
	if cfg.SessionOpenTimeout == 0 {
		cfg.SessionOpenTimeout = DefaultSessionOpenTimeout
	}
	cfg.TrustedProxies = append([]netip.Prefix(nil), cfg.TrustedProxies...)
	for _, p := range cfg.TrustedProxies {
		if !p.IsValid() {
			return nil, fmt.Errorf("%w: invalid trusted proxy prefix", ErrInvalidConfig)
		}
	}
	if cfg.CarrierIdleTimeout == 0 {
		cfg.CarrierIdleTimeout = DefaultCarrierIdleTimeout
	}
	if cfg.ClientTimeout == 0 {
		cfg.ClientTimeout = DefaultClientTimeout
	}
	if cfg.AbandonTimeout == 0 {
		cfg.AbandonTimeout = DefaultAbandonTimeout
	}
	if cfg.ShutdownTimeout == 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.TLSConfig != nil {
		cfg.TLSConfig = cfg.TLSConfig.Clone()
	}
	switch {
	case cfg.NumTurbotunnel < 0 || cfg.NumTurbotunnel > 1024:
		return nil, fmt.Errorf("%w: NumTurbotunnel %d out of range 1..1024", ErrInvalidConfig, cfg.NumTurbotunnel)
	case cfg.DialTimeout < 0, cfg.HandshakeTimeout < 0, cfg.CarrierIdleTimeout < 0,
		cfg.ClientTimeout < 0, cfg.AbandonTimeout < 0, cfg.ShutdownTimeout < 0, cfg.TokenTimeout < 0, cfg.SessionOpenTimeout < 0:
		return nil, fmt.Errorf("%w: negative timeout", ErrInvalidConfig)
	case cfg.NewSessionBurst < 0:
		return nil, fmt.Errorf("%w: negative NewSessionBurst", ErrInvalidConfig)
	case cfg.Path != "" && cfg.Path[0] != '/':
		return nil, fmt.Errorf("%w: Path %q does not start with /", ErrInvalidConfig, cfg.Path)
	}
	if len(cfg.Backends) > 0 {
		if cfg.Dial != nil || cfg.ForwardAddr != "" {
			return nil, fmt.Errorf("%w: Backends exclude Dial and ForwardAddr", ErrInvalidConfig)
		}
		if cfg.Transport == "" {
			cfg.Transport = "snowflake"
		}
		if cfg.BackendCheckInterval == 0 {
			cfg.BackendCheckInterval = DefaultBackendCheckInterval
		}
		if cfg.BackendCheckInterval < 0 {
			return nil, fmt.Errorf("%w: negative BackendCheckInterval", ErrInvalidConfig)
		}
		backends := make([]Backend, len(cfg.Backends))
		names := make(map[string]bool, len(backends))
		for i, b := range cfg.Backends {
			b, err := b.withDefaults()
			if err != nil {
				return nil, err
			}
			if names[b.Name] {
				return nil, fmt.Errorf("%w: two backends named %q", ErrInvalidConfig, b.Name)
			}
			names[b.Name] = true
			backends[i] = b
		}
		cfg.Backends = backends
		return &settings{Config: cfg}, nil
	}
	if cfg.Dial == nil {
		if cfg.ForwardAddr == "" {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, ErrNoTarget)
		}
		cfg.Dial = TCPDialer(cfg.ForwardAddr)
	}
	return &settings{Config: cfg}, nil
}

// trusts reports whether a is one of the trusted proxies.
func (cfg *Config) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range cfg.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
