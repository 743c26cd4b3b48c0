package client

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flurrypt/flurry/client/internal/nat"
	"github.com/flurrypt/flurry/client/internal/rendezvous"
	"github.com/flurrypt/flurry/client/internal/webrtcpeer"
	"github.com/flurrypt/flurry/messages"
)

// Rendezvous carries an encoded client poll request to the broker and
// returns the broker's encoded reply (see package messages). The HTTP, AMP
// cache and SQS methods are built in; WithRendezvous plugs in another one.
type Rendezvous interface {
	Exchange(ctx context.Context, request []byte) ([]byte, error)
}

// SQSConfig is what Config.NewSQSRendezvous builds an SQS rendezvous from.
type SQSConfig struct {
	// QueueURL and Credentials are Config.SQSQueueURL and
	// Config.SQSCredentials, unchecked.
	QueueURL, Credentials string
	// Transport carries the SQS requests: the client's broker transport
	// (through Config.SOCKS5Proxy, with its uTLS fingerprint).
	Transport http.RoundTripper
	// Timeout is Config.RendezvousTimeout; zero means the method's
	// default.
	Timeout time.Duration
	// Logger is the client's.
	Logger *slog.Logger
}

// Option changes how New builds a Client: hooks and test seams.
type Option func(*options)

type options struct {
	rendezvous    Rendezvous
	httpTransport http.RoundTripper
	natProbe      nat.ProbeConfig
}

// WithRendezvous replaces the rendezvous method (the broker URL, fronts and
// uTLS options are then unused, and Config.SOCKS5Proxy applies only to
// STUN and WebRTC).
func WithRendezvous(r Rendezvous) Option {
	return func(o *options) { o.rendezvous = r }
}

// WithHTTPTransport replaces the transport of the HTTP, AMP cache or SQS
// rendezvous (for example to send broker requests through a proxy).
// utls-imitate is then ignored, and so is Config.SOCKS5Proxy for broker
// requests: the transport is then the caller's to route.
func WithHTTPTransport(rt http.RoundTripper) Option {
	return func(o *options) { o.httpTransport = rt }
}

// Client makes sessions to a relay through proxies. Create it with New,
// call Dial for each stream and Close when done. Several Clients may live in
// one process; they share nothing.
type Client struct {
	cfg        *settings
	log        *slog.Logger
	rendezvous Rendezvous
	dialer     *webrtcpeer.Dialer
	stunAddrs  []string // host:port of the STUN servers, for NAT probing
	natPolicy  nat.Policy
	natProbe   nat.ProbeConfig

	eventsDropped atomic.Uint64

	mu       sync.Mutex // guards the fields below
	closed   bool
	sessions map[*session]struct{}
	natOnce  bool               // the NAT probe has been started
	cancel   context.CancelFunc // ends the NAT probe
	wg       sync.WaitGroup     // the NAT probe
}

// New checks cfg, fills in defaults and returns a Client. It starts
// nothing: the first Dial starts NAT detection.
func New(cfg Config, opts ...Option) (*Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	s, err := cfg.settle()
	if err != nil {
		return nil, err
	}
	if s.broker == nil && s.SQSQueueURL == "" && o.rendezvous == nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, ErrNoRendezvous)
	}
	for _, skipped := range s.skippedICE {
		s.Logger.Warn("skipping ICE server: not a stun:, turn: or turns: URL", "server", skipped)
	}
	var socks *socks5Setup
	if s.socks5 != nil {
		if socks, err = newSOCKS5(s.socks5, s.Config); err != nil {
			return nil, fmt.Errorf("%w: SOCKS5 proxy: %w", ErrInvalidConfig, err)
		}
	}
	peerCfg := webrtcpeer.Config{
		ICEServers:         s.iceServers,
		LoopbackOnly:       s.LoopbackOnly,
		KeepLocalAddresses: s.KeepLocalAddresses,
		CovertDTLS:         s.CovertDTLS,
		GatherTimeout:      s.GatherTimeout,
		OpenTimeout:        s.DataChannelTimeout,
		IdleTimeout:        s.IdleTimeout,
		DeadPeerTimeout:    s.DeadPeerTimeout,
		Logger:             s.Logger,
	}
	natProbe := o.natProbe
	if socks != nil {
		peerCfg.Net = socks.net
		if natProbe.ListenPacket == nil {
			natProbe.ListenPacket = socks.net.Associate
		}
		if natProbe.Resolve == nil {
			natProbe.Resolve = socks.net.ResolveSTUN
		}
	}
	dialer, err := webrtcpeer.NewDialer(peerCfg)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	rv := o.rendezvous
	if rv == nil {
		if rv, err = s.newRendezvous(o.httpTransport, socks); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
	}
	return &Client{
		cfg:        s,
		log:        s.Logger,
		rendezvous: rv,
		dialer:     dialer,
		stunAddrs:  s.stunAddrs,
		natProbe:   natProbe,
		sessions:   make(map[*session]struct{}),
	}, nil
}

// newRendezvous builds the rendezvous method s names, its requests sent
// through transport, or else through a transport of its own (with the
// uTLS fingerprint, through socks if not nil).
func (s *settings) newRendezvous(transport http.RoundTripper, socks *socks5Setup) (Rendezvous, error) {
	if transport == nil {
		tc := rendezvous.TransportConfig{
			UTLSImitate:   s.UTLSImitate,
			UTLSRemoveSNI: s.UTLSRemoveSNI,
		}
		if socks != nil {
			tc.DialContext = socks.dial
		}
		var err error
		if transport, err = rendezvous.NewTransport(tc); err != nil {
			return nil, err
		}
	}
	switch {
	case s.SQSQueueURL != "":
		rv, err := s.NewSQSRendezvous(SQSConfig{
			QueueURL:    s.SQSQueueURL,
			Credentials: s.SQSCredentials,
			Transport:   transport,
			Timeout:     s.RendezvousTimeout,
			Logger:      s.Logger,
		})
		if err != nil {
			return nil, fmt.Errorf("sqsqueue: %w", err)
		}
		return rv, nil
	case s.ampCache != nil:
		return rendezvous.NewAMP(rendezvous.AMPConfig{
			Broker:    s.broker,
			Cache:     s.ampCache,
			Fronts:    s.Fronts,
			Transport: transport,
			Timeout:   s.RendezvousTimeout,
		})
	default:
		return rendezvous.NewHTTP(rendezvous.HTTPConfig{
			Broker:    s.broker,
			Fronts:    s.Fronts,
			Transport: transport,
			Timeout:   s.RendezvousTimeout,
		})
	}
}

// Dial starts a new session (a fresh ClientID, its own proxies and KCP and
// smux sessions, as Snowflake does per SOCKS connection) and returns its
// stream once the first proxy is connected. The session then keeps
// Config.Max proxies connected, replacing the ones that go away, until the
// stream is closed. If ctx ends before any proxy connects, Dial returns an
// error matching ErrNoProxy that also wraps the last failure.
func (c *Client) Dial(ctx context.Context) (*Conn, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, ErrClosed
	}
	c.startNATProbeLocked()
	c.mu.Unlock()

	s, err := newSession(c)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		s.close()
		return nil, ErrClosed
	}
	c.sessions[s] = struct{}{}
	c.mu.Unlock()

	conn, err := s.open(ctx)
	if err != nil {
		c.forget(s)
		s.close()
		return nil, err
	}
	return conn, nil
}

// forget removes a closed session from the registry.
func (c *Client) forget(s *session) {
	c.mu.Lock()
	delete(c.sessions, s)
	c.mu.Unlock()
}

// Close ends every session (their streams fail) and NAT detection, and
// waits for their goroutines. It is idempotent.
func (c *Client) Close() error {
	c.mu.Lock()
	c.closed = true
	sessions := make([]*session, 0, len(c.sessions))
	for s := range c.sessions {
		sessions = append(sessions, s)
	}
	clear(c.sessions)
	cancel := c.cancel
	c.mu.Unlock()
	for _, s := range sessions {
		s.close()
	}
	if cancel != nil {
		cancel()
	}
	c.wg.Wait()
	return nil
}

// NATType returns the NAT type detected so far: unknown, restricted or
// unrestricted.
func (c *Client) NATType() string { return c.natPolicy.Actual() }

// startNATProbeLocked starts NAT detection once, if there are STUN servers.
func (c *Client) startNATProbeLocked() {
	if c.natOnce {
		return
	}
	c.natOnce = true
	if len(c.stunAddrs) == 0 {
		c.log.Debug("no STUN server: NAT type stays unknown")
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		t, err := nat.Detect(ctx, c.stunAddrs, c.natProbe)
		if err != nil {
			c.log.Info("NAT type detection failed", "err", err)
		}
		c.natPolicy.Set(t)
		c.log.Info("NAT type", "nat", t)
	}()
}

// emit sends an event without blocking.
func (c *Client) emit(e Event) {
	if c.cfg.Events == nil {
		return
	}
	e.Time = time.Now()
	select {
	case c.cfg.Events <- e:
	default:
		c.eventsDropped.Add(1)
	}
}

// warmer is a Rendezvous that can open its connection to the broker ahead
// of an exchange (the HTTP and AMP cache methods).
type warmer interface {
	Warm()
}

// connect runs one attempt: offer, rendezvous, DataChannel. gate holds the
// ready offer until the rendezvous may go ahead; its error ends the
// attempt. It returns the attempt's peer id, also on failure (empty if no
// offer was made).
func (c *Client) connect(ctx context.Context, gate func(context.Context) error) (*webrtcpeer.Peer, string, error) {
	// The broker connection opens while ICE gathers the offer's
	// candidates (a STUN round trip), not after.
	if w, ok := c.rendezvous.(warmer); ok {
		w.Warm()
	}
	var natSent, peerID string
	negotiated := false
	negotiate := func(ctx context.Context, offer string) (string, error) {
		if err := gate(ctx); err != nil {
			return "", err
		}
		natSent = c.natPolicy.ToSend()
		c.emit(Event{Kind: EventOfferCreated, Peer: peerID, NAT: natSent})
		req, err := messages.ClientPollRequest{Offer: offer, NAT: natSent, Fingerprint: c.cfg.BridgeFingerprint}.Encode()
		if err != nil {
			return "", fmt.Errorf("encode poll request: %w", err)
		}
		body, err := c.rendezvous.Exchange(ctx, req)
		if err != nil {
			return "", fmt.Errorf("rendezvous: %w", err)
		}
		resp, err := messages.DecodeClientPollResponse(body)
		if err != nil {
			return "", fmt.Errorf("broker response: %w", err)
		}
		if resp.Error != "" {
			return "", brokerError(resp.Error)
		}
		negotiated = true
		c.emit(Event{Kind: EventBrokerAnswered, Peer: peerID})
		return resp.Answer, nil
	}
	peer, err := c.dialer.Connect(ctx, negotiate, func(id string) { peerID = id })
	if err != nil {
		if negotiated && ctx.Err() == nil {
			// The proxy was matched but we could not reach it: if we
			// claimed unrestricted for an unknown NAT, stop claiming.
			c.natPolicy.ConnectionFailed(natSent)
		}
		return nil, peerID, err
	}
	return peer, peerID, nil
}

// brokerError maps a broker's error text to an error matching ErrBroker.
// The text comes from the network: known texts are kept (a malformed
// session description keeps its prefix only), others are hidden.
func brokerError(text string) error {
	switch text {
	case messages.StrNoProxies, messages.StrTimedOut, messages.StrUnknownBridge,
		messages.ErrUnknownVersion.Error(), messages.ErrInvalidNAT.Error(),
		messages.ErrMissingOffer.Error(), messages.ErrInvalidFingerprint.Error():
		return fmt.Errorf("%w: %s", ErrBroker, text)
	}
	if prefix := messages.ErrInvalidSessionDescription.Error(); strings.HasPrefix(text, prefix) {
		return fmt.Errorf("%w: %s", ErrBroker, prefix)
	}
	return fmt.Errorf("%w: unrecognised error text", ErrBroker)
}
