package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/client/internal/multipath"
	"github.com/flurrypt/flurry/client/internal/webrtcpeer"
	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/tunnelseal"
	"github.com/flurrypt/flurry/common/turbotunnel"
)

// relayAddr is the fixed remote address of the session's packet conn (the
// relay, whichever proxy carries the packets).
type relayAddr struct{}

func (relayAddr) Network() string { return "turbotunnel" }
func (relayAddr) String() string  { return "relay" }

// session is one Dial: a ClientID, the proxies that carry it, and the KCP
// and smux sessions over them.
type session struct {
	c     *Client
	id    turbotunnel.ClientID
	seal  *tunnelseal.Client // seals the carriers; nil without Config.RelayKey (seal.go)
	log   *slog.Logger
	pconn *multipath.Conn
	acks  kcpAcks

	cancel context.CancelFunc // ends the collector
	wg     sync.WaitGroup     // the collector

	connected chan struct{} // closed when the first proxy connects
	connOnce  sync.Once

	mu      sync.Mutex // guards the fields below
	lastErr error      // last connection failure
	kcp     *kcp.UDPSession
	mux     *smux.Session
	fins    *finWatchConn
	// silences holds the carriers whose Peer is Silent or Quiet
	// (webrtcpeer's Peer.OnSilence); silenceChanged is closed and
	// replaced whenever it changes.
	silences       map[*carrier]webrtcpeer.Silence
	silenceChanged chan struct{}

	closeOnce sync.Once
	resends   atomic.Uint64 // times resend reset KCP's timers
}

func newSession(c *Client) (*session, error) {
	seal, err := newSeal(c.cfg)
	if err != nil {
		return nil, err
	}
	id := turbotunnel.NewClientID()
	if seal != nil {
		id = seal.ClientID()
	}
	s := &session{
		c:         c,
		id:        id,
		seal:      seal,
		log:       c.log.With("session", id.String()),
		connected: make(chan struct{}),

		silences:       make(map[*carrier]webrtcpeer.Silence),
		silenceChanged: make(chan struct{}),
	}
	prober := &kcpProber{}
	serving := 0 // all
	if c.cfg.Standby {
		serving = c.cfg.Max
	}
	s.pconn = multipath.New(id, relayAddr{}, multipath.ReplyWatch{
		Timeout:      c.cfg.ReplyTimeout,
		ExpectsReply: prober.expectsReply,
		Floor:        s.kcpRetransmitFloor,
		Probe:        prober.probe,
	}, serving)
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	s.wg.Add(1)
	go s.collect(ctx)
	return s, nil
}

// open waits for the first proxy, then starts KCP and smux and opens the
// stream.
func (s *session) open(ctx context.Context) (*Conn, error) {
	select {
	case <-s.connected:
	case <-s.pconn.Closed():
		return nil, ErrClosed
	case <-ctx.Done():
		s.mu.Lock()
		last := s.lastErr
		s.mu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("%w: %w (last failure: %w)", ErrNoProxy, ctx.Err(), last)
		}
		return nil, fmt.Errorf("%w: %w", ErrNoProxy, ctx.Err())
	}

	kconn, err := kcp.NewConn2(relayAddr{}, nil, 0, 0, ackWatchConn{s.pconn, &s.acks})
	if err != nil {
		return nil, fmt.Errorf("start KCP: %w", err)
	}
	turbotunnel.ConfigureKCP(kconn)
	fins := &finWatchConn{UDPSession: kconn}
	mux, err := smux.Client(fins, turbotunnel.ClientSmuxConfig())
	if err != nil {
		_ = kconn.Close()
		return nil, fmt.Errorf("start smux: %w", err)
	}
	s.mu.Lock()
	s.kcp, s.mux, s.fins = kconn, mux, fins
	s.mu.Unlock()
	stream, err := mux.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("open stream: %w", err)
	}
	fins.sid.Store(stream.ID())
	return &Conn{Stream: stream, s: s}, nil
}

// kcpRetransmitFloor is twice KCP's current retransmission timeout (zero
// before KCP starts): the reply watch waits at least that long, so that a
// slow path is not taken for a dead proxy.
func (s *session) kcpRetransmitFloor() time.Duration { return 2 * s.kcpRTO() }

// kcpRTO is KCP's current retransmission timeout, zero before KCP starts.
func (s *session) kcpRTO() time.Duration {
	s.mu.Lock()
	kconn := s.kcp
	s.mu.Unlock()
	if kconn == nil {
		return 0
	}
	return time.Duration(kconn.GetRTO()) * time.Millisecond
}

// A closing session lingers: its KCP keeps running after the stream's FIN
// until the relay has acknowledged every segment the session sent (the FIN
// among them), has closed the stream too (its FIN, sent once its target
// has closed) and has then been quiet for closeQuiet, or KCP's
// retransmission timeout if longer, so that the acknowledgements of the
// relay's last segments (its FIN, the data it had in flight) went out and
// a lost one was answered again. Without it the relay keeps retransmitting
// what the session never acknowledged until smux's keep-alive timeout, for
// minutes. closeLinger bounds the whole (a target that never closes, a
// relay that never answers), and a Client's Close cuts it short, so that
// tor's SIGTERM or closed stdin ends the process promptly.
const (
	closeLinger = 2 * time.Second
	closeQuiet  = 200 * time.Millisecond
	// lingerPoll is how often the lingering session looks at its state.
	lingerPoll = 10 * time.Millisecond
)

// closeStream closes stream, so that its FIN goes to the relay, and
// lingers as closeLinger says; close then tears the session down.
func (s *session) closeStream(stream *smux.Stream) error {
	s.cancel() // a closing session takes no new proxy
	// smux waits up to 30 s for the FIN to enter KCP; the timer's hard
	// close ends that wait, and the lingering, at closeLinger.
	hard := time.AfterFunc(closeLinger, s.close)
	defer hard.Stop()
	if err := stream.Close(); err != nil {
		return err
	}
	tick := time.NewTicker(lingerPoll)
	defer tick.Stop()
	for s.pconn.Len() > 0 {
		quiet := max(closeQuiet, s.kcpRTO())
		if s.fins.fin.Load() && s.acks.allAcked() && s.acks.quietFor(quiet, time.Now()) {
			break
		}
		select {
		case <-tick.C:
		case <-s.pconn.Closed():
			return nil
		}
	}
	return nil
}

// close tears the session down and waits for its goroutines. Idempotent.
func (s *session) close() {
	s.closeOnce.Do(func() {
		s.cancel()
		s.mu.Lock()
		mux, kconn := s.mux, s.kcp
		s.mu.Unlock()
		if mux != nil {
			_ = mux.Close()
		}
		if kconn != nil {
			_ = kconn.Close()
		}
		_ = s.pconn.Close()
		s.wg.Wait()
		s.c.forget(s)
	})
}

// want is how many proxies the session keeps connected: Config.Max, and
// one more with Config.Standby (the multipath Conn has it stand by).
func (s *session) want() int {
	if s.c.cfg.Standby {
		return s.c.cfg.Max + 1
	}
	return s.c.cfg.Max
}

// collect keeps want proxies connected until ctx ends: whenever the
// session has fewer that are not quiet, it runs one connection attempt,
// pausing after failures (RetryMin doubling up to RetryMax, with jitter).
// Counting a quiet proxy as missing starts its replacement before the
// proxy is dropped, which on a long path saves most of a rendezvous; if it
// is heard again meanwhile, one of the two is closed. The attempt starts
// as soon as a proxy is silent, to gather the offer's candidates (a STUN
// round trip), and goes to the broker only once the proxy is quiet or
// dropped (gate).
func (s *session) collect(ctx context.Context) {
	defer s.wg.Done()
	pause := s.c.cfg.RetryMin
	for {
		// Wait until a proxy is missing or silent.
		for {
			changed, silenceChanged := s.pconn.Changed(), s.silenceChan()
			if _, sound := s.proxies(); sound < s.want() {
				break
			}
			select {
			case <-changed:
			case <-silenceChanged:
			case <-ctx.Done():
				return
			}
		}
		peer, peerID, err := s.c.connect(ctx, s.gate)
		if errors.Is(err, errNotNeeded) {
			s.log.Debug("silent proxy heard again; offer dropped", "peer", peerID)
			continue
		}
		if healthy, _ := s.proxies(); err == nil && healthy >= s.want() {
			// The quiet proxy was heard again while this one connected.
			s.log.Info("replacement not needed", "peer", peerID)
			_ = peer.Close()
			continue
		}
		if err == nil {
			err = s.addPeer(peer)
		}
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			s.log.Info("proxy connection failed", "peer", peerID, "err", err)
			s.c.emit(Event{Kind: EventProxyFailed, Peer: peerID, Err: err})
			s.mu.Lock()
			s.lastErr = err
			s.mu.Unlock()
			jittered := pause/2 + rand.N(pause/2+1)
			t := time.NewTimer(jittered)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			pause = min(2*pause, s.c.cfg.RetryMax)
			continue
		}
		pause = s.c.cfg.RetryMin
	}
}

// addPeer opens the turbotunnel stream on peer and adds it to the
// session's carriers.
func (s *session) addPeer(peer *webrtcpeer.Peer) error {
	car, err := newCarrier(peer, s.id, s.seal)
	if err != nil {
		_ = peer.Close()
		return err
	}
	car.onClose = func(reason error) {
		s.forgetSilence(car)
		if errors.Is(reason, webrtcpeer.ErrClosed) && s.closing() {
			return
		}
		s.log.Info("proxy lost", "peer", peer.ID(), "err", reason)
		s.c.emit(Event{Kind: EventProxyLost, Peer: peer.ID(), Err: reason})
		if s.pconn.Len() > 1 { // it still counts the lost one
			s.resend()
		}
	}
	if _, err := s.pconn.Add(car); err != nil {
		return err
	}
	peer.OnSilence(func(silence webrtcpeer.Silence) { s.setSilence(car, silence) })
	if s.pconn.Len() == 1 && s.pconn.Stats().Carriers > 1 {
		s.resend() // a proxy after none
	}
	s.log.Info("proxy connected", "peer", peer.ID(), "standby", s.pconn.Standing(car))
	s.c.emit(Event{Kind: EventProxyConnected, Peer: peer.ID()})
	s.connOnce.Do(func() { close(s.connected) })
	return nil
}

// proxies returns how many of the session's proxies are not quiet
// (healthy) and how many are not even silent (sound).
func (s *session) proxies() (healthy, sound int) {
	n := s.pconn.Len()
	s.mu.Lock()
	defer s.mu.Unlock()
	healthy, sound = n, n-len(s.silences)
	for _, silence := range s.silences {
		if silence == webrtcpeer.Quiet {
			healthy--
		}
	}
	return healthy, sound
}

// silenceChan returns a channel that is closed the next time a proxy's
// Silence changes.
func (s *session) silenceChan() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.silenceChanged
}

// gate holds an attempt that a silent proxy started, its offer ready,
// until the session needs it: it returns nil once fewer than want proxies
// are healthy, and errNotNeeded once want are sound again.
func (s *session) gate(ctx context.Context) error {
	for {
		changed, silenceChanged := s.pconn.Changed(), s.silenceChan()
		healthy, sound := s.proxies()
		switch {
		case healthy < s.want():
			return nil
		case sound >= s.want():
			return errNotNeeded
		}
		select {
		case <-changed:
		case <-silenceChanged:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// setSilence records what car's Peer makes of its silence. A quiet proxy
// in use hands over to the standby proxy, if there is one. A proxy heard
// again while the session holds more than want proxies (its replacement
// connected meanwhile) is closed: it has just shown it may stall, and the
// replacement has not.
func (s *session) setSilence(car *carrier, silence webrtcpeer.Silence) {
	s.mu.Lock()
	select {
	case <-car.Done():
		s.mu.Unlock()
		return // onClose has forgotten it, or will
	default:
	}
	s.markSilenceLocked(car, silence)
	s.mu.Unlock()
	switch {
	case silence == webrtcpeer.Quiet && s.pconn.Demote(car):
		s.log.Info("proxy quiet; the standby proxy took over", "peer", car.peer.ID())
	case silence == webrtcpeer.Quiet:
		s.log.Info("proxy quiet; collecting a replacement", "peer", car.peer.ID())
	case silence == webrtcpeer.Heard && s.pconn.Len() > s.want():
		go car.CloseWithReason(ErrReplaced)
	}
}

// forgetSilence drops a closed carrier from the silent ones.
func (s *session) forgetSilence(car *carrier) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.markSilenceLocked(car, webrtcpeer.Heard)
}

// markSilenceLocked records car's Silence and wakes the collector if it
// changed; mu is held.
func (s *session) markSilenceLocked(car *carrier, silence webrtcpeer.Silence) {
	if s.silences[car] == silence {
		return
	}
	if silence == webrtcpeer.Heard {
		delete(s.silences, car)
	} else {
		s.silences[car] = silence
	}
	close(s.silenceChanged)
	s.silenceChanged = make(chan struct{})
}

// resend makes KCP send every segment in flight again at its next flush,
// rather than when its timer says: a lost proxy took what it held (smux's
// window updates among it), and while the session had no proxy each timer
// grew. Flurry's relay does the same on its side.
func (s *session) resend() {
	s.mu.Lock()
	kconn := s.kcp
	s.mu.Unlock()
	if kconn != nil {
		kconn.ResetRTO()
		s.resends.Add(1)
	}
}

// closing reports whether close has started.
func (s *session) closing() bool {
	select {
	case <-s.pconn.Closed():
		return true
	default:
		return false
	}
}

// carrier adapts a Peer to multipath.Carrier: it sends the turbotunnel
// prefix first, then one encapsulated packet per DataChannel message, and
// reads encapsulated packets (skipping padding) from the received bytes.
type carrier struct {
	peer      *webrtcpeer.Peer
	send      *tunnelseal.Stream // the writer's, if sealed (seal.go)
	recv      *tunnelseal.Stream // the reader's, if sealed
	wbuf      bytes.Buffer       // owned by the writer
	onClose   func(reason error)
	closeOnce sync.Once
}

// newCarrier writes the token and the ClientID, as two messages as
// Snowflake's client does, or with seal, a sealed join header.
func newCarrier(peer *webrtcpeer.Peer, id turbotunnel.ClientID, seal *tunnelseal.Client) (*carrier, error) {
	c := &carrier{peer: peer}
	c.wbuf.Grow(multipath.MaxBatch * (encapsulation.MaxPrefixLength + multipath.BufferSize + tunnelseal.Overhead))
	if seal != nil {
		return c, c.joinSealed(seal)
	}
	if _, err := peer.Write(turbotunnel.Token[:]); err != nil {
		return nil, fmt.Errorf("send token: %w", err)
	}
	if _, err := peer.Write(id[:]); err != nil {
		return nil, fmt.Errorf("send client id: %w", err)
	}
	return c, nil
}

func (c *carrier) ReadPacket(p []byte) (int, error) {
	n, err := encapsulation.ReadData(c.peer, p)
	if errors.Is(err, encapsulation.ErrTooLong) {
		return 0, err
	}
	if c.recv != nil {
		return c.open(p[:n], err)
	}
	if err != nil && n == 0 {
		return 0, err
	}
	return n, nil // a truncated packet (io.ErrShortBuffer) is KCP's to reject
}

func (c *carrier) Done() <-chan struct{} { return c.peer.Done() }

func (c *carrier) Close() error { return c.CloseWithReason(nil) }

// CloseWithReason closes the carrier; the reason reported is the Peer's
// own if it died by itself, else reason, else webrtcpeer.ErrClosed.
func (c *carrier) CloseWithReason(reason error) error {
	c.closeOnce.Do(func() {
		if err := c.peer.Err(); err != nil {
			reason = err
		}
		_ = c.peer.Close()
		if reason == nil {
			reason = webrtcpeer.ErrClosed
		}
		if c.onClose != nil {
			c.onClose(reason)
		}
	})
	return nil
}

// Conn is a session's stream: a net.Conn that survives proxies coming and
// going. Closing it ends the session.
type Conn struct {
	*smux.Stream
	s *session
}

// Close closes the stream and ends its session: its proxies are released
// and its goroutines have ended when Close returns. Before that it lingers
// until the relay has what it needs to end its side cleanly, at most
// closeLinger (2 s); Client.Close ends that at once. Idempotent.
func (c *Conn) Close() error {
	err := c.s.closeStream(c.Stream)
	c.s.close()
	if errors.Is(err, io.ErrClosedPipe) {
		err = nil
	}
	return err
}

// Stats is a snapshot of a session's counters.
type Stats struct {
	// ProxiesConnected counts the proxies the session has used.
	ProxiesConnected uint64
	// Proxies is the number of proxies connected now.
	Proxies int
	// PacketsSent and PacketsReceived count KCP packets.
	PacketsSent, PacketsReceived uint64
	// SendDropped and ReceiveDropped count packets dropped on full queues.
	SendDropped, ReceiveDropped uint64
	// Probes counts the window probes sent through proxies that fell
	// silent while the session was only receiving (see ReplyTimeout).
	Probes uint64
	// Resends counts the times KCP sent everything in flight again at
	// once: a proxy was lost while others remained, or one connected
	// after none.
	Resends uint64
	// Takeovers counts the times a standby proxy (Config.Standby) took
	// over from one in use.
	Takeovers uint64
}

// Stats returns the session's counters.
func (c *Conn) Stats() Stats {
	st := c.s.pconn.Stats()
	return Stats{
		ProxiesConnected: st.Carriers,
		Proxies:          c.s.pconn.Len(),
		PacketsSent:      st.PacketsSent,
		PacketsReceived:  st.PacketsRecvd,
		SendDropped:      st.SendDropped,
		ReceiveDropped:   st.RecvDropped,
		Probes:           st.Probes,
		Resends:          c.s.resends.Load(),
		Takeovers:        st.Takeovers,
	}
}

var _ net.Conn = (*Conn)(nil)
