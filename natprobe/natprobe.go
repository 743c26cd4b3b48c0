package natprobe

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/pionlog"
	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/peerlimit"
	"github.com/flurrypt/flurry/messages"
)

// Path is where Handler serves probes.
const Path = "/probe"

// StubSid is the Sid of every answer, as in Snowflake's probetest.
const StubSid = "stub-sid"

// Defaults applied by New to zero Config fields.
const (
	DefaultGatherTimeout = 10 * time.Second // below the proxy's 30 s response timeout
	DefaultOpenTimeout   = 20 * time.Second // the proxy's own wait
	DefaultCloseTimeout  = 5 * time.Second
	DefaultMaxConcurrent = 64
	DefaultMaxPerAddress = 4
	// DefaultListenAddr is flurry-natprobe's default: a probe is usually
	// behind a TLS-terminating front end on the same machine.
	DefaultListenAddr      = "127.0.0.1:8443"
	DefaultShutdownTimeout = 5 * time.Second
)

// Config configures a Server; the zero value works.
type Config struct {
	// ListenAddr is the TCP address Run listens on. Empty means
	// DefaultListenAddr. Serve ignores it.
	ListenAddr string
	// TLSConfig, if not nil, makes Run and Serve speak TLS. Nil: plain
	// HTTP.
	TLSConfig *tls.Config
	// ShutdownTimeout bounds the wait for the requests in flight when Run
	// or Serve stops. Zero means DefaultShutdownTimeout.
	ShutdownTimeout time.Duration

	// STUNURLs are the probe's ICE servers (so that its answer carries its
	// public, NATed address). Empty: host candidates only.
	STUNURLs []string
	// KeepLocalAddresses keeps private candidates in answers (for a lab
	// where proxies and probe share a private network).
	KeepLocalAddresses bool
	// LoopbackOnly restricts WebRTC to loopback, for tests.
	LoopbackOnly bool
	// ConfigureSettingEngine, if set, is called last on the SettingEngine.
	ConfigureSettingEngine func(*webrtc.SettingEngine)
	// GatherTimeout bounds ICE gathering before the answer is sent.
	GatherTimeout time.Duration
	// OpenTimeout bounds the wait for the proxy's DataChannel.
	OpenTimeout time.Duration
	// CloseTimeout bounds the wait for the proxy to close after the probe
	// closed the DataChannel.
	CloseTimeout time.Duration
	// MaxConcurrent bounds the probes in progress; more get 503.
	MaxConcurrent int
	// MaxPerAddress bounds the probes in progress from one address (one
	// /64 for IPv6), so that one peer cannot take every slot for the
	// open timeout; more get 503. A proxy runs one probe at a time.
	// The address is the TCP peer's: behind a reverse proxy, every
	// probe shares the reverse proxy's.
	MaxPerAddress int
	// Logger receives the log; nil discards it.
	Logger *slog.Logger
}

// Server answers NAT probes. Close it to end the probes in progress.
type Server struct {
	cfg Config
	log *slog.Logger
	api *webrtc.API
	sem chan struct{}
	wg  sync.WaitGroup
	mu  sync.Mutex // guards open and the wg.Add that follows the check
	// closing ends when Close is called: the probes in progress stop.
	closing context.Context
	close   context.CancelFunc
	open    bool               // false once closed
	peers   *peerlimit.Counter // probes in progress per address
}

// settings are a Config with its defaults filled in and validated.
type settings struct {
	Config
}

// settle fills in c's defaults and validates it; its errors wrap
// ErrInvalidConfig.
func (c Config) settle() (*settings, error) {
	c.STUNURLs = append([]string(nil), c.STUNURLs...)
	if c.ListenAddr == "" {
		c.ListenAddr = DefaultListenAddr
	}
	if c.TLSConfig != nil {
		c.TLSConfig = c.TLSConfig.Clone()
	}
	if c.GatherTimeout == 0 {
		c.GatherTimeout = DefaultGatherTimeout
	}
	if c.OpenTimeout == 0 {
		c.OpenTimeout = DefaultOpenTimeout
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.MaxConcurrent == 0 {
		c.MaxConcurrent = DefaultMaxConcurrent
	}
	if c.MaxPerAddress == 0 {
		c.MaxPerAddress = DefaultMaxPerAddress
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.GatherTimeout < 0 || c.OpenTimeout < 0 || c.CloseTimeout < 0 || c.MaxConcurrent < 0 || c.MaxPerAddress < 0 || c.ShutdownTimeout < 0 {
		return nil, fmt.Errorf("%w: negative value", ErrInvalidConfig)
	}
	for _, u := range c.STUNURLs {
		if !strings.HasPrefix(u, "stun:") && !strings.HasPrefix(u, "stuns:") {
			return nil, fmt.Errorf("%w: ICE server %q is not a stun: URL", ErrInvalidConfig, u)
		}
	}
	return &settings{Config: c}, nil
}

// New returns a Server.
func New(c Config) (*Server, error) {
	set, err := c.settle()
	if err != nil {
		return nil, err
	}
	cfg := set.Config
	log := cfg.Logger
	var se webrtc.SettingEngine
	se.LoggerFactory = pionlog.New(log)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	switch {
	case cfg.LoopbackOnly:
		webrtcnet.LoopbackOnly(&se, nil)
	case !cfg.KeepLocalAddresses:
		// Private host candidates are useless to proxies elsewhere and
		// would let proxies on the probe's own network connect directly.
		se.SetIPFilter(func(ip net.IP) bool {
			return len(ip) > 0 && !sdp.IsLocal(addrFromIP(ip))
		})
	}
	if cfg.ConfigureSettingEngine != nil {
		cfg.ConfigureSettingEngine(&se)
	}
	closing, closeFn := context.WithCancel(context.Background())
	return &Server{
		cfg:     cfg,
		log:     log,
		api:     webrtcnet.NewAPI(se),
		sem:     make(chan struct{}, cfg.MaxConcurrent),
		closing: closing,
		close:   closeFn,
		open:    true,
		peers:   peerlimit.New(cfg.MaxPerAddress),
	}, nil
}

// Handler returns the HTTP handler: Path serves probes, everything else is
// 404.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(Path, s.serveProbe)
	return mux
}

// Close ends the probes in progress and waits for them. It is idempotent;
// probes arriving afterwards get 503.
func (s *Server) Close() error {
	s.mu.Lock()
	s.open = false
	s.mu.Unlock()
	s.close()
	s.wg.Wait()
	return nil
}

// track registers one probe goroutine from peer unless the server is
// closed or peer has MaxPerAddress probes in progress; untrack undoes it.
func (s *Server) track(peer netip.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.open || !s.peers.Acquire(peer) {
		return false
	}
	s.wg.Add(1)
	return true
}

func (s *Server) untrack(peer netip.Addr) {
	s.peers.Release(peer)
	s.wg.Done()
}

func (s *Server) serveProbe(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	switch r.Method {
	case http.MethodOptions:
		w.Header().Set("Access-Control-Allow-Headers", "Origin, Content-Type")
		return
	case http.MethodPost:
	default:
		w.Header().Set("Allow", "POST, OPTIONS")
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, messages.MaxBodySize))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		} else {
			w.WriteHeader(http.StatusBadRequest)
		}
		return
	}
	poll, err := messages.DecodeProxyPollResponse(body)
	if err != nil || poll.Status != messages.StatusClientMatch {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	offer, err := messages.DecodeSessionDescription(poll.Offer)
	if err != nil || offer.Type != messages.SDPTypeOffer {
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	select {
	case s.sem <- struct{}{}:
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	peer := peerOf(r.RemoteAddr)
	if !s.track(peer) {
		<-s.sem
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	// From here the probe goroutine (or this function on failure) owns the
	// semaphore slot and the wait group entry.
	pr, answer, status := s.answer(r, offer.SDP)
	if status != http.StatusOK {
		<-s.sem
		s.untrack(peer)
		w.WriteHeader(status)
		return
	}
	go func() {
		defer s.untrack(peer)
		defer func() { <-s.sem }()
		pr.await(s)
	}()
	reply, err := messages.ProxyAnswerRequest{Version: messages.ProxyVersion, Sid: StubSid, Answer: answer}.Encode()
	if err != nil { // cannot happen for an answer pion produced
		pr.abort()
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(reply)
}

// probe is one answered offer waiting for the proxy's DataChannel.
type probe struct {
	pc      *webrtc.PeerConnection
	opened  chan *webrtc.DataChannel // first opened channel
	closed  chan struct{}            // closed when that channel closes
	aborted chan struct{}
	once    sync.Once
}

func (pr *probe) abort() { pr.once.Do(func() { close(pr.aborted) }) }

// answer builds the WebRTC answer to offerSDP; status is 200 on success.
func (s *Server) answer(r *http.Request, offerSDP string) (*probe, string, int) {
	var cfg webrtc.Configuration
	if len(s.cfg.STUNURLs) > 0 {
		cfg.ICEServers = []webrtc.ICEServer{{URLs: s.cfg.STUNURLs}}
	}
	pc, err := s.api.NewPeerConnection(cfg)
	if err != nil {
		s.log.Warn("new peer connection", "err", err)
		return nil, "", http.StatusInternalServerError
	}
	pr := &probe{
		pc:      pc,
		opened:  make(chan *webrtc.DataChannel, 1),
		closed:  make(chan struct{}),
		aborted: make(chan struct{}),
	}
	var closeOnce sync.Once
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		dc.OnOpen(func() {
			select {
			case pr.opened <- dc:
				dc.OnClose(func() { closeOnce.Do(func() { close(pr.closed) }) })
			default:
			}
		})
	})
	fail := func(status int) (*probe, string, int) {
		pc.GracefulClose()
		return nil, "", status
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offerSDP}); err != nil {
		return fail(http.StatusBadRequest)
	}
	// Gathering ends early if the prober leaves or the server closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	local, err := webrtcnet.LocalDescription(ctx, pc, webrtc.SDPTypeAnswer, s.cfg.GatherTimeout, !s.cfg.KeepLocalAddresses && !s.cfg.LoopbackOnly)
	switch {
	case ctx.Err() != nil:
		return fail(http.StatusServiceUnavailable)
	case err != nil:
		return fail(http.StatusInternalServerError)
	}
	text := local.SDP
	answer, err := messages.SessionDescription{Type: messages.SDPTypeAnswer, SDP: text}.Encode()
	if err != nil {
		return fail(http.StatusInternalServerError)
	}
	return pr, answer, http.StatusOK
}

// await waits for the proxy's DataChannel, closes it once open, waits a
// little for the proxy to notice, then closes the peer connection.
func (pr *probe) await(s *Server) {
	defer pr.pc.GracefulClose()
	open := time.NewTimer(s.cfg.OpenTimeout)
	defer open.Stop()
	var dc *webrtc.DataChannel
	select {
	case dc = <-pr.opened:
	case <-open.C:
		return
	case <-pr.aborted:
		return
	case <-s.closing.Done():
		return
	}
	// Closing the channel (an SCTP stream reset, sent after the DCEP ack)
	// tells the proxy we are done; closing the whole peer connection at
	// once could lose the ack (Snowflake's issue 40419).
	dc.Close()
	wait := time.NewTimer(s.cfg.CloseTimeout)
	defer wait.Stop()
	select {
	case <-pr.closed:
	case <-wait.C:
	case <-s.closing.Done():
	}
}
