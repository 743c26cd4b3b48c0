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
)

// DialFunc connects one client stream to its destination (tor's ORPort or
// ExtORPort, or any TCP service). client is the client's IP address as the
// proxy reported it (the client_ip query parameter); it is the zero Addr
// when unknown.
type DialFunc func(ctx context.Context, client netip.Addr) (net.Conn, error)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultListenAddr         = "127.0.0.1:8000"
	DefaultHandshakeTimeout   = 30 * time.Second
	DefaultCarrierIdleTimeout = 2 * time.Minute
	DefaultMaxConns           = 100000
	DefaultDialTimeout        = 10 * time.Second
	DefaultShutdownTimeout    = 5 * time.Second
	// DefaultClientTimeout is how long a ClientID's outgoing packet queue
	// lives without traffic (Snowflake's clientMapTimeout).
	DefaultClientTimeout = time.Minute
)

// Turbotunnel parameters that must match Snowflake's client (reference
// sections 4.5 and 5.3).
const (
	kcpMTU               = 1400
	kcpWindow            = 65535
	smuxVersion          = 2
	smuxKeepAliveTimeout = 4 * time.Minute
	smuxMaxStreamBuffer  = 1 << 20
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
	// HandshakeTimeout bounds the HTTP request and the token and ClientID
	// that follow the upgrade. Default DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
	// CarrierIdleTimeout closes a carrier that has received nothing for
	// this long (Snowflake clients send smux keepalives every 10 s).
	// Default DefaultCarrierIdleTimeout.
	CarrierIdleTimeout time.Duration
	// ClientTimeout is how long a ClientID's outgoing queue outlives its
	// last packet. Default DefaultClientTimeout.
	ClientTimeout time.Duration
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

// withDefaults returns a copy of cfg with defaults filled in, or an error.
func (cfg Config) withDefaults() (Config, error) {
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
	if cfg.CarrierIdleTimeout == 0 {
		cfg.CarrierIdleTimeout = DefaultCarrierIdleTimeout
	}
	if cfg.ClientTimeout == 0 {
		cfg.ClientTimeout = DefaultClientTimeout
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
		return cfg, fmt.Errorf("%w: NumTurbotunnel %d out of range 1..1024", ErrInvalidConfig, cfg.NumTurbotunnel)
	case cfg.DialTimeout < 0, cfg.HandshakeTimeout < 0, cfg.CarrierIdleTimeout < 0,
		cfg.ClientTimeout < 0, cfg.ShutdownTimeout < 0:
		return cfg, fmt.Errorf("%w: negative timeout", ErrInvalidConfig)
	case cfg.Path != "" && cfg.Path[0] != '/':
		return cfg, fmt.Errorf("%w: Path %q does not start with /", ErrInvalidConfig, cfg.Path)
	}
	if len(cfg.Backends) > 0 {
		if cfg.Dial != nil || cfg.ForwardAddr != "" {
			return cfg, fmt.Errorf("%w: Backends exclude Dial and ForwardAddr", ErrInvalidConfig)
		}
		if cfg.Transport == "" {
			cfg.Transport = "snowflake"
		}
		if cfg.BackendCheckInterval == 0 {
			cfg.BackendCheckInterval = DefaultBackendCheckInterval
		}
		if cfg.BackendCheckInterval < 0 {
			return cfg, fmt.Errorf("%w: negative BackendCheckInterval", ErrInvalidConfig)
		}
		backends := make([]Backend, len(cfg.Backends))
		names := make(map[string]bool, len(backends))
		for i, b := range cfg.Backends {
			b, err := b.withDefaults()
			if err != nil {
				return cfg, err
			}
			if names[b.Name] {
				return cfg, fmt.Errorf("%w: two backends named %q", ErrInvalidConfig, b.Name)
			}
			names[b.Name] = true
			backends[i] = b
		}
		cfg.Backends = backends
		return cfg, nil
	}
	if cfg.Dial == nil {
		if cfg.ForwardAddr == "" {
			return cfg, ErrNoTarget
		}
		cfg.Dial = TCPDialer(cfg.ForwardAddr)
	}
	return cfg, nil
}
