package socksserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/internal/netaccept"
)

// Defaults used when the corresponding Config field is zero.
const (
	DefaultMaxBridges    = 16
	DefaultMaxHandshakes = 128
	DefaultDialTimeout   = 2 * time.Minute
)

// firstByteTimeout is how long a new connection may stay silent: a SOCKS
// client speaks first, at once.
const firstByteTimeout = time.Second

// copyBufferSize is the buffer of each direction of a SOCKS connection.
const copyBufferSize = 16 << 10

// eventBuffer is the depth of the channel that carries the clients' events
// to Config.OnEvent.
const eventBuffer = 64

// Config configures a Server.
type Config struct {
	// Client is the configuration every connection's client starts from;
	// the connection's bridge-line arguments are applied on top. A
	// configuration without a rendezvous method is accepted: bridge
	// lines must then name one (url=). Its Events field is replaced when
	// OnEvent is set.
	Client client.Config
	// OnEvent, if not nil, is called for every event of every client
	// (client.Config.Events), from one goroutine, until Close.
	OnEvent func(client.Event)
	// MaxBridges bounds the clients kept at once, one per distinct set of
	// bridge-line arguments (tor sends one set per Bridge line; Tor
	// Browser has two Snowflake lines). Default DefaultMaxBridges.
	MaxBridges int
	// MaxHandshakes bounds the SOCKS handshakes in progress. Default
	// DefaultMaxHandshakes.
	MaxHandshakes int
	// DialTimeout bounds the wait for a connection's first proxy. Default
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// Logger receives the server's logs; nil discards them.
	Logger *slog.Logger
}

// Server carries SOCKS connections through client sessions. Its methods
// may be called from any goroutine.
type Server struct {
	cfg     Config
	log     *slog.Logger
	bridges *bridges

	closing context.Context // done once Close is called
	close   context.CancelFunc

	mu     sync.Mutex     // guards closed and the additions to wg
	closed bool           // Close was called: no more connections
	wg     sync.WaitGroup // connection handlers and the event reporter
}

// New checks cfg.Client (as client.New does, except that a missing
// rendezvous method is left to the bridge lines) and returns a Server.
func New(cfg Config) (*Server, error) {
	if cfg.MaxBridges <= 0 {
		cfg.MaxBridges = DefaultMaxBridges
	}
	if cfg.MaxHandshakes <= 0 {
		cfg.MaxHandshakes = DefaultMaxHandshakes
	}
	if cfg.DialTimeout <= 0 {
		cfg.DialTimeout = DefaultDialTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c, err := client.New(cfg.Client)
	if c != nil {
		_ = c.Close()
	}
	if err != nil && !errors.Is(err, client.ErrNoRendezvous) {
		return nil, err
	}
	s := &Server{log: log}
	s.closing, s.close = context.WithCancel(context.Background())
	if cfg.OnEvent != nil {
		events := make(chan client.Event, eventBuffer)
		cfg.Client.Events = events
		s.wg.Go(func() { s.reportEvents(events) })
	}
	s.cfg = cfg
	s.bridges = newBridges(cfg.MaxBridges, func(args pt.Args) (*client.Client, error) {
		c, err := client.ApplyBridgeArgs(s.cfg.Client, args)
		if err != nil {
			return nil, err
		}
		return client.New(c)
	})
	return s, nil
}

// reportEvents passes the clients' events to Config.OnEvent until Close.
func (s *Server) reportEvents(events <-chan client.Event) {
	for {
		select {
		case e := <-events:
			s.cfg.OnEvent(e)
		case <-s.closing.Done():
			return
		}
	}
}

// Serve accepts SOCKS connections on ln and carries each through a
// session, until ctx ends, Close is called or ln fails for good; then it
// closes ln. It returns nil, or the error that ended accepting. The
// connections it accepted are closed when it returns; Close waits for
// them. Serve may run on several listeners at once.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	defer ln.Close()
	defer context.AfterFunc(ctx, func() { _ = ln.Close() })() // wakes Accept
	hs := &handshakes{max: s.cfg.MaxHandshakes}
	var backoff netaccept.Backoff
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !netaccept.Temporary(err) {
				return fmt.Errorf("accept: %w", err)
			}
			if !backoff.Failing() {
				s.log.Warn("SOCKS accept failed; retrying", "err", err)
			}
			if !backoff.Wait(ctx) {
				return nil
			}
			continue
		}
		if backoff.Failing() {
			s.log.Info("SOCKS accept works again")
			backoff.Reset()
		}
		h := hs.admit(c)
		if h == nil {
			s.log.Debug("too many SOCKS handshakes in progress; connection closed")
			_ = c.Close()
			continue
		}
		if !s.track() {
			hs.done(h)
			_ = c.Close()
			return nil
		}
		go func() {
			defer s.wg.Done()
			s.serveConn(ctx, h, hs)
		}()
	}
}

// ServeAll runs Serve on every listener until ctx ends, Close is called or
// one of them fails for good; then the others stop too. It returns the
// first failure, or nil.
func (s *Server) ServeAll(ctx context.Context, lns ...net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(lns))
	for _, ln := range lns {
		go func() {
			err := s.Serve(ctx, ln)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var first error
	for range lns {
		if err := <-errs; first == nil {
			first = err
		}
	}
	return first
}

// track counts one more connection handler, unless the server is closed.
func (s *Server) track() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
	return true
}

// Close ends every Serve, closes every client (their sessions end, so the
// connections they carry close) and waits for the connections' handlers.
// It is idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.close()
	s.bridges.close()
	s.wg.Wait()
	return nil
}

// serveConn waits for the first byte of h's connection, runs its SOCKS
// handshake (goptlib's, with its deadline), frees its handshake slot, and
// carries the connection.
func (s *Server) serveConn(ctx context.Context, h *handshake, hs *handshakes) {
	c := h.conn
	defer context.AfterFunc(ctx, func() { _ = c.Close() })()
	var first [1]byte
	_ = c.SetReadDeadline(time.Now().Add(firstByteTimeout))
	if _, err := io.ReadFull(c, first[:]); err != nil {
		hs.done(h)
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	hs.spoke(h)
	conn, err := pt.NewSocksListener(&oneConnListener{c: &prefixConn{Conn: c, first: first[0]}}).AcceptSocks()
	hs.done(h)
	if err != nil {
		// goptlib has closed c; a failed handshake is the local
		// application's business, not worth a log line.
		return
	}
	s.carry(ctx, conn)
}

// carry carries one SOCKS connection through a new session of the client
// its bridge-line arguments name.
func (s *Server) carry(ctx context.Context, conn *pt.SocksConn) {
	defer conn.Close()
	c, release, err := s.bridges.acquire(conn.Req.Args)
	if errors.Is(err, errTooManyBridges) || errors.Is(err, client.ErrClosed) {
		s.log.Warn("SOCKS connection refused", "err", err)
		_ = conn.Reject()
		return
	}
	if err != nil {
		s.log.Error("bad bridge arguments", "err", err)
		_ = conn.Reject()
		return
	}
	defer release()
	dctx, cancel := context.WithTimeout(ctx, s.cfg.DialTimeout)
	stream, err := c.Dial(dctx)
	cancel()
	if err != nil {
		s.log.Warn("no proxy for SOCKS connection", "err", err)
		_ = conn.Reject()
		return
	}
	defer stream.Close()
	if err := conn.Grant(&net.TCPAddr{IP: net.IPv4zero, Port: 0}); err != nil {
		return
	}
	// Copy both ways; when either direction ends, close both (and a
	// shutdown closes the stream through the client).
	done := make(chan struct{}, 2)
	go func() {
		buf := make([]byte, copyBufferSize)
		_, _ = io.CopyBuffer(stream, conn, buf)
		done <- struct{}{}
	}()
	go func() {
		buf := make([]byte, copyBufferSize)
		_, _ = io.CopyBuffer(conn, stream, buf)
		done <- struct{}{}
	}()
	pending := 2
	select {
	case <-done:
		pending--
	case <-ctx.Done():
	}
	// The SOCKS connection first: closing the stream lingers (see
	// client.Conn.Close).
	_ = conn.Close()
	_ = stream.Close()
	for ; pending > 0; pending-- {
		<-done
	}
}
