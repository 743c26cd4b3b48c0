package webrtcpeer

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/pion/datachannel"
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/messages"
)

// Defaults for the zero fields of Config.
const (
	DefaultGatherTimeout   = 5 * time.Second
	DefaultOpenTimeout     = 10 * time.Second // Snowflake's DataChannelTimeout
	DefaultIdleTimeout     = 20 * time.Second // Snowflake's SnowflakeTimeout
	DefaultDeadPeerTimeout = time.Second
)

// MaxMessageSize is the largest DataChannel message a Peer reads (and the
// size its SDP announces); it is also the size of each Peer's read buffer.
const MaxMessageSize = 64 << 10

// sctpReceiveBuffer is the client's SCTP receive window (pion's default is
// 1 MiB): what a proxy may have in flight towards the client. At 1 MiB it
// held a download to about 4.8 MB/s at a 150 ms round trip while the path
// carried more. It cannot grow much further: pion's ICE agent holds at
// most 1 MB of packets that DTLS has not yet taken and drops the rest, so
// the more may be in flight, the shorter the pause of the client's receive
// path that loses packets (each loss stalls the download for seconds).
// 1.5 MiB, with the client on two processors (pionruntime.ClientMaxProcs),
// carried about a quarter more at 150 ms, and the lab saw no such drop
// (docs/performance.md, "Long and lossy paths").
const sctpReceiveBuffer = 3 << 19

// iceFailedTimeout is how long ICE stays disconnected before it reports
// failed; a Peer dies half a dead-peer timeout after disconnected already.
const iceFailedTimeout = 5 * time.Second

// deadlineRefresh is how often a reading Peer pushes its idle deadline back.
const deadlineRefresh = time.Second

// Config configures a Dialer. The zero value works: no ICE servers, public
// addresses only, Snowflake's timeouts and a one-second dead-peer timeout.
type Config struct {
	// ICEServers are the STUN and TURN servers, from ParseICEServers.
	ICEServers []webrtc.ICEServer

	// LoopbackOnly restricts ICE to loopback interfaces and addresses
	// with mDNS off: for tests and demonstrations on one machine. It
	// excludes ICEServers.
	LoopbackOnly bool

	// KeepLocalAddresses keeps private and link-local addresses in the
	// offer (Snowflake's -keep-local-addresses).
	KeepLocalAddresses bool

	// GatherTimeout bounds ICE gathering; the offer then carries the
	// candidates found so far. Zero means DefaultGatherTimeout.
	GatherTimeout time.Duration

	// OpenTimeout bounds the wait for the DataChannel to open once the
	// answer is applied. Zero means DefaultOpenTimeout.
	OpenTimeout time.Duration

	// IdleTimeout closes a Peer that receives nothing for this long.
	// Zero means DefaultIdleTimeout.
	IdleTimeout time.Duration

	// DeadPeerTimeout: a Peer that receives no packet at all (keepalives
	// included) for this long dies. Before that it may be silent and
	// quiet (Peer.OnSilence), so that a replacement can be sought while
	// it may still come back. Zero means DefaultDeadPeerTimeout.
	DeadPeerTimeout time.Duration

	// Net replaces pion's network (SettingEngine.SetNet); nil means the
	// host's. With package proxynet's Net every ICE socket, STUN included,
	// goes through a SOCKS5 proxy. As with the host's network, gathering
	// uses every address the Net has and, unless KeepLocalAddresses, the
	// offer is stripped of local-address candidates afterwards; with
	// LoopbackOnly only loopback addresses are used.
	Net transport.Net

	// CovertDTLS shapes the DTLS ClientHello; the zero value is pion's.
	// The client offers, so it is the DTLS server against every answerer
	// that picks the active role (pion and browsers do) and this hello
	// is sent only against one that does not.
	CovertDTLS covertdtls.Config

	// Logger receives debug logs; nil discards them.
	Logger *slog.Logger

	// configureSettingEngine, if set, is called last on the SettingEngine
	// (tests: gather on loopback interfaces only).
	configureSettingEngine func(*webrtc.SettingEngine)
}

// Dialer makes Peers. It is safe for concurrent use.
type Dialer struct {
	// se is what every peer connection's API is built from: each gets its
	// own, for its own webrtcnet.QuickPair.
	se         webrtc.SettingEngine
	iceServers []webrtc.ICEServer
	cfg        Config
	log        *slog.Logger
	stripLocal bool // strip local-address candidates from offers
	// shaper learns each answer's ICE credentials for covert DTLS's mimic.
	shaper *covertdtls.Shaper
}

// NewDialer checks cfg and returns a Dialer.
func NewDialer(cfg Config) (*Dialer, error) {
	if cfg.GatherTimeout <= 0 {
		cfg.GatherTimeout = DefaultGatherTimeout
	}
	if cfg.OpenTimeout <= 0 {
		cfg.OpenTimeout = DefaultOpenTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.DeadPeerTimeout <= 0 {
		cfg.DeadPeerTimeout = DefaultDeadPeerTimeout
	}
	if cfg.LoopbackOnly && len(cfg.ICEServers) > 0 {
		return nil, errLoopbackWithICE
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}

	se, shaper, err := webrtcnet.Peer{
		Logger:             logger,
		Net:                cfg.Net,
		MaxMessageSize:     MaxMessageSize,
		CovertDTLS:         cfg.CovertDTLS,
		LoopbackOnly:       cfg.LoopbackOnly,
		KeepLocalAddresses: cfg.KeepLocalAddresses,
	}.SettingEngine()
	if err != nil {
		return nil, err
	}
	se.EnableDataChannelBlockWrite(true)
	se.SetSCTPMaxReceiveBufferSize(sctpReceiveBuffer)
	// ICE reports disconnected after half the dead-peer timeout without a
	// packet, which starts the Peer's own checks (OnSilence), and connected
	// again when one comes; pion checks, and sends a keepalive, at the
	// keepalive interval (silenceDeadlines counts on both).
	se.SetICETimeouts(cfg.DeadPeerTimeout/2, iceFailedTimeout, cfg.DeadPeerTimeout/4)
	// The client is ICE's controlling agent: it nominates the first pair
	// that works. pion waits 500 ms before nominating a pair with a
	// server-reflexive candidate and 1 s for a peer-reflexive one, in case
	// a better pair succeeds meanwhile; behind a NAT, or with a proxy
	// behind one, that is most pairs, and the wait delayed every
	// connection. Relay (TURN) pairs keep pion's wait.
	se.SetSrflxAcceptanceMinWait(0)
	se.SetPrflxAcceptanceMinWait(0)
	// No IP filter outside LoopbackOnly: pion gathers server-reflexive
	// candidates only on the local addresses an IP filter keeps, so
	// filtering out private addresses would leave a client behind a NAT
	// (nearly every client) with no candidate at all. Local candidates are
	// stripped from the offer instead.
	stripLocal := !cfg.LoopbackOnly && !cfg.KeepLocalAddresses
	if stripLocal {
		// A SOCKS5 proxy's relay address may be on loopback (tests, or
		// tor's own proxy on this host); stripped afterwards like any
		// local candidate.
		se.SetIncludeLoopbackCandidate(cfg.Net != nil)
	}
	// IPv6 too, loopback-only included; TCP candidates never.
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4, webrtc.NetworkTypeUDP6})
	if cfg.configureSettingEngine != nil {
		cfg.configureSettingEngine(se)
	}
	return &Dialer{
		se:         *se,
		iceServers: cfg.ICEServers,
		cfg:        cfg,
		log:        logger,
		stripLocal: stripLocal,
		shaper:     shaper,
	}, nil
}

// Negotiator carries an offer to a proxy and returns its answer, both as
// serialized session descriptions ({"type":...,"sdp":...}).
type Negotiator func(ctx context.Context, offer string) (answer string, err error)

// Connect makes an offer, negotiates it and returns the Peer once its
// DataChannel is open. offerCreated, if not nil, is called with the
// Peer's id once the offer is ready.
func (d *Dialer) Connect(ctx context.Context, negotiate Negotiator, offerCreated func(id string)) (*Peer, error) {
	id := newPeerID()
	var quick webrtcnet.QuickPair
	se := d.se
	quick.Install(&se)
	pc, err := webrtcnet.NewAPI(se).NewPeerConnection(webrtc.Configuration{ICEServers: d.iceServers})
	if err != nil {
		return nil, fmt.Errorf("new peer connection: %w", err)
	}
	quick.Watch(pc)
	p := &Peer{
		id:          id,
		pc:          pc,
		idleTimeout: d.cfg.IdleTimeout,
		deadAfter:   d.cfg.DeadPeerTimeout,
		dead:        make(chan struct{}),
		closed:      make(chan struct{}),
		log:         d.log.With("peer", id),
		untrack:     func() {},
	}
	ok := false
	defer func() {
		if !ok {
			_ = p.Close()
		}
	}()

	opened := make(chan datachannel.ReadWriteCloserDeadliner, 1)
	dc, err := pc.CreateDataChannel(id, &webrtc.DataChannelInit{Ordered: ptr(true)})
	if err != nil {
		return nil, fmt.Errorf("create data channel: %w", err)
	}
	dc.OnOpen(func() {
		raw, err := dc.DetachWithDeadline()
		if err != nil {
			p.die(channelError(err))
			return
		}
		opened <- raw
	})
	dc.OnClose(func() { p.die(ErrClosed) })
	pc.OnICEConnectionStateChange(func(s webrtc.ICEConnectionState) {
		p.log.Debug("ICE connection state", "state", s.String())
		switch s {
		case webrtc.ICEConnectionStateDisconnected:
			p.silent(true)
		case webrtc.ICEConnectionStateConnected:
			p.silent(false)
		case webrtc.ICEConnectionStateFailed:
			p.die(errConnectionFailed)
		case webrtc.ICEConnectionStateClosed:
			p.die(ErrClosed)
		}
	})
	pc.OnConnectionStateChange(func(s webrtc.PeerConnectionState) {
		p.log.Debug("peer connection state", "state", s.String())
		switch s {
		case webrtc.PeerConnectionStateFailed:
			p.die(errConnectionFailed)
		case webrtc.PeerConnectionStateClosed:
			p.die(ErrClosed)
		}
	})

	offer, err := webrtcnet.LocalDescription(ctx, pc, webrtc.SDPTypeOffer, d.cfg.GatherTimeout, d.stripLocal)
	if err != nil {
		return nil, err
	}
	if !offer.Complete {
		d.log.Debug("ICE gathering timed out; offering the candidates found so far", "peer", id)
	}
	offerJSON, err := messages.SessionDescription{Type: messages.SDPTypeOffer, SDP: offer.SDP}.Encode()
	if err != nil {
		return nil, fmt.Errorf("encode offer: %w", err)
	}
	if offerCreated != nil {
		offerCreated(id)
	}

	answerJSON, err := negotiate(ctx, offerJSON)
	if err != nil {
		return nil, err
	}
	answer, err := messages.DecodeSessionDescription(answerJSON)
	if err != nil {
		return nil, fmt.Errorf("%w: not a session description", ErrBadAnswer)
	}
	if answer.Type != messages.SDPTypeAnswer {
		return nil, fmt.Errorf("%w: not of type answer", ErrBadAnswer)
	}
	if d.shaper != nil && sdp.HasSessionAttribute(answer.SDP, webrtcnet.QuickPairAttribute) {
		// The proxy selects without our nomination, so we may select
		// without sending one; covert DTLS's mimic then marks our next
		// checks as nominating, as Chromium's are, which moves the proxy
		// to our pair if it selected another. Without mimic our checks
		// never nominate: the peers could stay on different pairs, DTLS
		// going out on one 5-tuple and back on another.
		quick.Enable(func() { d.shaper.Nominated(answer.SDP) })
	}
	if !p.track(d.shaper.TrackRemote(answer.SDP)) {
		return nil, p.Err()
	}
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeAnswer, SDP: answer.SDP}); err != nil {
		return nil, errAnswerRefused
	}

	openTimer := time.NewTimer(d.cfg.OpenTimeout)
	defer openTimer.Stop()
	select {
	case raw := <-opened:
		p.mu.Lock()
		p.dc = raw
		p.mu.Unlock()
	case <-openTimer.C:
		return nil, errOpenTimeout
	case <-p.dead:
		return nil, p.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The channel may have died between opening and now.
	select {
	case <-p.dead:
		return nil, p.Err()
	default:
	}
	p.buf = make([]byte, MaxMessageSize)
	ok = true
	return p, nil
}

func ptr[T any](v T) *T { return &v }

// newPeerID returns "snowflake-" and 16 random hex digits, the shape of
// Snowflake's DataChannel labels.
func newPeerID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "snowflake-" + hex.EncodeToString(b[:])
}

// Peer is a connected proxy: a byte stream over one DataChannel. One
// goroutine may read and another write at the same time; Close and Done
// may be used from any goroutine.
type Peer struct {
	id          string
	pc          *webrtc.PeerConnection
	idleTimeout time.Duration
	log         *slog.Logger

	mu        sync.Mutex // guards dc, err and untrack
	dc        datachannel.ReadWriteCloserDeadliner
	err       error // why the peer died; set once, before dead closes
	dead      chan struct{}
	closeOnce sync.Once
	closed    chan struct{} // closed when Close has finished
	untrack   func()        // forgets the answer's ICE credentials (covert DTLS)

	quietMu      sync.Mutex // guards the fields below; held while onSilence runs
	deadAfter    time.Duration
	disconnected bool        // ICE reports disconnected
	state        Silence     // what the Peer makes of it
	check        *time.Timer // the next checkSilence while silent
	checkGen     int         // which check is current; a stale one returns
	onSilence    func(Silence)
	// When the silence began to be checked, whether the first check has
	// noted the packets and keepalive answers received by then, and how
	// many.
	silentSince time.Time
	noted       bool
	received    uint64

	// deadlineMu orders the reader's and StandBy's read deadlines.
	deadlineMu sync.Mutex
	standby    bool // guarded by deadlineMu: no idle timeout (StandBy)

	// Owned by the reader.
	buf         []byte // MaxMessageSize bytes
	r, w        int    // unread bytes are buf[r:w]
	deadlineSet time.Time
}

// StandBy lifts the idle timeout while standing is true, for a proxy the
// caller keeps connected but sends nothing through, so that nothing comes
// back; ICE still notices a dead proxy. With standing false the timeout
// counts again from now.
func (p *Peer) StandBy(standing bool) {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	p.deadlineMu.Lock()
	defer p.deadlineMu.Unlock()
	p.standby = standing
	if dc != nil {
		_ = dc.SetReadDeadline(p.idleDeadline(time.Now()))
	}
}

// idleDeadline is the read deadline of a read at now: none while the
// Peer stands by; deadlineMu is held.
func (p *Peer) idleDeadline(now time.Time) time.Time {
	if p.standby {
		return time.Time{}
	}
	return now.Add(p.idleTimeout)
}

// ID returns the Peer's id (its DataChannel label), for logs.
func (p *Peer) ID() string { return p.id }

// Done is closed when the Peer dies or is closed.
func (p *Peer) Done() <-chan struct{} { return p.dead }

// Err returns why the Peer died, or nil while it is alive.
func (p *Peer) Err() error {
	select {
	case <-p.dead:
	default:
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// track keeps untrack for Close, or calls it and returns false if the
// Peer is already dead.
func (p *Peer) track(untrack func()) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		untrack()
		return false
	}
	p.untrack = untrack
	return true
}

// die records the first reason the peer died, closes Done and starts
// closing the PeerConnection, so that blocked reads and writes return at
// once (a write blocks while a dead proxy's SCTP window is full). Pion
// callbacks call die, and must not close the PeerConnection themselves,
// hence the goroutine; Close waits for it.
func (p *Peer) die(reason error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return
	}
	p.err = reason
	close(p.dead)
	go p.Close()
}

// quietSlack is added to the silence a live proxy can keep before a Peer
// is quiet, for jitter.
const quietSlack = 20 * time.Millisecond

// Silence is what a Peer makes of ICE's silence (OnSilence).
type Silence uint8

const (
	// Heard: packets arrive, or the silence is an idle session's, between
	// its keepalives.
	Heard Silence = iota
	// Silent: ICE has heard nothing for half the dead-peer timeout, and
	// data was arriving when the silence began.
	Silent
	// Quiet: silent for longer than a live proxy stays silent. ICE sends
	// a keepalive at each of its checks, a quarter of the dead-peer
	// timeout apart, and reports the silence at the first check after
	// half of it, when the keepalives sent into the silence have waited
	// half and a quarter of the timeout. A live proxy answers each within
	// a round trip (the Peer allows 1.25 round trips and quietSlack): the
	// Peer is quiet once both answers are overdue, two in a row lost or a
	// dead proxy.
	Quiet
)

// OnSilence calls f whenever the Peer's Silence changes, and at once if it
// is not Heard. A Peer silent for the whole dead-peer timeout dies. f runs
// on a timer's or pion's goroutine and must not block or call back into
// the Peer.
func (p *Peer) OnSilence(f func(Silence)) {
	p.quietMu.Lock()
	defer p.quietMu.Unlock()
	p.onSilence = f
	if p.state != Heard {
		f(p.state)
	}
}

// setState changes the Peer's Silence and tells onSilence; quietMu is
// held.
func (p *Peer) setState(state Silence) {
	if p.state == state {
		return
	}
	p.state = state
	if p.onSilence != nil {
		p.onSilence(state)
	}
}

// silent records ICE's verdict: disconnected (nothing heard for half the
// dead-peer timeout) starts checking the silence, connected again ends it.
func (p *Peer) silent(silent bool) {
	p.quietMu.Lock()
	defer p.quietMu.Unlock()
	if p.disconnected == silent {
		return
	}
	p.disconnected = silent
	if silent {
		p.silentSince = time.Now()
		p.noted = false
		// Not on pion's goroutine: the statistics wait for ICE's loop.
		p.scheduleCheck(0)
		return
	}
	p.checkGen++
	p.check.Stop()
	p.setState(Heard)
}

// scheduleCheck runs checkSilence after d; quietMu is held.
func (p *Peer) scheduleCheck(d time.Duration) {
	p.checkGen++
	gen := p.checkGen
	p.check = time.AfterFunc(d, func() { p.checkSilence(gen) })
}

// checkSilence reads ICE's statistics of the selected pair: the first
// time in a silence to note what has been received, then to see whether
// anything came since. It kills the Peer or marks it quiet when its time
// has come, and else checks again then. Once something came, ICE reports
// connected at its next check.
func (p *Peer) checkSilence(gen int) {
	st, ok := p.pc.SCTP().Transport().ICETransport().GetSelectedCandidatePairStats()
	p.quietMu.Lock()
	defer p.quietMu.Unlock()
	if gen != p.checkGen || !p.disconnected {
		return
	}
	if !ok {
		p.die(errDisconnected)
		return
	}
	received := uint64(st.PacketsReceived) + uint64(st.ResponsesReceived)
	if !p.noted {
		p.noted = true
		p.received = received
		if p.silentSince.Sub(st.LastPacketReceivedTimestamp.Time()) < p.deadAfter {
			p.setState(Silent) // data was arriving
		}
	} else if received != p.received {
		return
	}
	elapsed := time.Since(p.silentSince)
	rtt := time.Duration(st.CurrentRoundTripTime * float64(time.Second))
	quietAt, dieAt := silenceDeadlines(rtt, p.deadAfter)
	if elapsed >= dieAt {
		p.die(errDisconnected)
		return
	}
	next := dieAt
	switch {
	case p.state != Silent || quietAt >= dieAt:
	case elapsed < quietAt:
		next = quietAt
	default:
		p.log.Debug("quiet", "silence", elapsed+p.deadAfter/2, "rtt", rtt)
		p.setState(Quiet)
	}
	p.scheduleCheck(next - elapsed)
}

// silenceDeadlines returns when, counted from ICE's report of a silence,
// a Peer that was carrying data is quiet and when it dies, on a path of
// round trip rtt. ICE reports the silence after half the dead-peer
// timeout; the second keepalive sent into it went out a quarter of the
// timeout before the report (Quiet).
func silenceDeadlines(rtt, deadAfter time.Duration) (quiet, die time.Duration) {
	return rtt + rtt/4 + quietSlack - deadAfter/4, deadAfter - deadAfter/2
}

// Read reads the bytes of received messages. It fails once the Peer is
// dead, and with ErrIdle when nothing arrived for the idle timeout.
func (p *Peer) Read(b []byte) (int, error) {
	if p.r == p.w {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, p.buf[p.r:p.w])
	p.r += n
	return n, nil
}

// ReadByte reads one byte (io.ByteReader, for encapsulation.ReadData).
func (p *Peer) ReadByte() (byte, error) {
	if p.r == p.w {
		if err := p.fill(); err != nil {
			return 0, err
		}
	}
	c := p.buf[p.r]
	p.r++
	return c, nil
}

// fill reads the next non-empty message into buf.
func (p *Peer) fill() error {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	if dc == nil {
		return ErrClosed
	}
	for {
		if now := time.Now(); now.Sub(p.deadlineSet) >= deadlineRefresh {
			p.deadlineSet = now
			p.deadlineMu.Lock()
			err := dc.SetReadDeadline(p.idleDeadline(now))
			p.deadlineMu.Unlock()
			if err != nil {
				return p.readError(err)
			}
		}
		n, err := dc.Read(p.buf)
		if err != nil {
			return p.readError(err)
		}
		if n > 0 {
			p.r, p.w = 0, n
			return nil
		}
	}
}

// readError turns a DataChannel read error into the Peer's reason to die.
func (p *Peer) readError(err error) error {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.die(ErrIdle)
	case errors.Is(err, io.ErrShortBuffer):
		p.die(errMessageTooLarge)
	default:
		p.die(channelError(err))
	}
	return p.Err()
}

// Write sends b as one DataChannel message. It blocks while the SCTP send
// buffer is full and fails once the Peer is dead.
func (p *Peer) Write(b []byte) (int, error) {
	p.mu.Lock()
	dc := p.dc
	p.mu.Unlock()
	if dc == nil {
		return 0, ErrClosed
	}
	n, err := dc.Write(b)
	if err != nil {
		p.die(channelError(err))
		return n, p.Err()
	}
	return n, nil
}

// Close closes the DataChannel and the PeerConnection and waits for pion to
// stop. It is idempotent, and every call waits until the Peer is closed.
func (p *Peer) Close() error {
	p.closeOnce.Do(func() {
		defer close(p.closed)
		p.mu.Lock()
		if p.err == nil {
			p.err = ErrClosed
			close(p.dead)
		}
		dc, untrack := p.dc, p.untrack
		p.mu.Unlock()
		if dc != nil {
			_ = dc.Close()
		}
		_ = p.pc.GracefulClose()
		untrack()
	})
	<-p.closed
	return nil
}
