package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/pion/datachannel"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/pacing"
	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/messages"
)

const (
	// copyBufferSize is the size of the pooled copy buffers: one
	// encapsulated KCP packet (MTU 1400 plus framing) fits in one read.
	copyBufferSize = 2048
	// bufferedLow is the DataChannel's initial low-water mark; the
	// relay→client copy moves it as its send window (sendwindow.go)
	// changes.
	bufferedLow = 256 << 10
)

var noClientIP netip.Addr

// serve runs one client session and records its outcome.
func (p *Proxy) serve(ctx context.Context, sid string, resp messages.ProxyPollResponse) {
	log := p.log.With("sid", sid)
	reason, err := p.runSession(ctx, log, sid, resp)
	switch {
	case reason != "" && ctx.Err() == nil:
		p.m.failed(reason)
		log.Info("client session failed", "stage", reason, "err", logReason(err))
	case err != nil && ctx.Err() == nil:
		log.Debug("client session ended", "err", logReason(err))
	default:
		log.Debug("client session ended")
	}
}

// openedChannel is a DataChannel the client opened, detached.
type openedChannel struct {
	dc  *webrtc.DataChannel
	rwc datachannel.ReadWriteCloserDeadliner
}

// runSession answers the client's offer, waits for its DataChannel,
// connects to the relay and copies. A non-empty reason means the session
// failed before it was relaying, at that stage.
func (p *Proxy) runSession(ctx context.Context, log *slog.Logger, sid string, resp messages.ProxyPollResponse) (reason string, err error) {
	offer, err := messages.DecodeSessionDescription(resp.Offer)
	if err != nil || offer.Type != messages.SDPTypeOffer {
		return FailOffer, ErrBadOffer
	}
	relayURL := resp.RelayURL
	if relayURL == "" {
		if p.s.RelayURL == "" {
			return FailOffer, fmt.Errorf("%w: no relay named and no default relay", ErrBadOffer)
		}
		if !p.relayUp.Load() {
			return FailRelay, errRelayDown
		}
		relayURL = p.s.RelayURL
	}
	cctx, cancel := context.WithTimeout(ctx, p.s.RelayDialTimeout)
	_, err = p.relay.policy.check(cctx, relayURL)
	cancel()
	if err != nil {
		return FailOffer, fmt.Errorf("relay %q refused: %w", relayURL, err)
	}
	clientIP, _ := sdp.ClientIP(offer.SDP)

	// The proxy selects a candidate pair as soon as it works both ways,
	// with any client, and says so in its answer (webrtcnet.QuickPair).
	var quick webrtcnet.QuickPair
	quick.Enable(nil)
	pc, err := p.newPeerConnection(&quick)
	if err != nil {
		return FailAnswer, fmt.Errorf("new peer connection: %w", err)
	}
	defer pc.GracefulClose()

	sess := newSession()
	opened := make(chan openedChannel, 1)
	pc.OnDataChannel(func(dc *webrtc.DataChannel) {
		dc.SetBufferedAmountLowThreshold(bufferedLow)
		dc.OnBufferedAmountLow(sess.drained)
		dc.OnOpen(func() {
			rwc, err := dc.DetachWithDeadline()
			if err != nil {
				return
			}
			select {
			case opened <- openedChannel{dc: dc, rwc: rwc}:
			default: // a second channel, or one that opened too late
				rwc.Close()
			}
		})
	})
	pc.OnConnectionStateChange(func(st webrtc.PeerConnectionState) {
		if st == webrtc.PeerConnectionStateFailed || st == webrtc.PeerConnectionStateClosed {
			sess.stop(errPeerConnectionFailed)
		}
	})

	defer p.shaper.TrackRemote(offer.SDP)()
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer.SDP}); err != nil {
		return FailOffer, fmt.Errorf("%w: refused by WebRTC", ErrBadOffer)
	}
	answerSDP, err := p.localDescription(ctx, pc, webrtc.SDPTypeAnswer, p.s.AnswerTimeout)
	if err != nil {
		return FailAnswer, fmt.Errorf("gather candidates: %w", err)
	}
	answerSDP = sdp.AddSessionAttribute(answerSDP, webrtcnet.QuickPairAttribute)
	answerJSON, err := messages.SessionDescription{Type: messages.SDPTypeAnswer, SDP: answerSDP}.Encode()
	if err != nil {
		return FailAnswer, fmt.Errorf("encode answer: %w", err)
	}
	if err := p.answer(ctx, sid, answerJSON); err != nil {
		return FailAnswer, err
	}
	// The relay's WebSocket opens while the client's ICE, DTLS and SCTP
	// handshakes run, not after them.
	early := p.dialRelayEarly(ctx, relayURL, clientIP)
	defer early.discard()

	var ch openedChannel
	t := time.NewTimer(p.s.DataChannelTimeout)
	select {
	case ch = <-opened:
		t.Stop()
	case <-t.C:
		return FailDataChannel, errDataChannelTimeout
	case <-sess.done:
		t.Stop()
		return FailDataChannel, sess.cause()
	case <-ctx.Done():
		t.Stop()
		return "", ctx.Err()
	}
	defer ch.rwc.Close()

	ws, err := early.take(ctx)
	if err != nil {
		return FailRelay, err
	}
	defer ws.Close()

	if sess.pacer = p.pacerFor(pc); sess.pacer != nil {
		defer sess.pacer.Close()
	}
	p.m.connected()
	defer p.m.disconnected()
	log.Debug("relaying client")
	return "", p.copy(ctx, sess, ch, ws)
}

// session is the shared stop state of one relayed client.
type session struct {
	done      chan struct{} // closed by stop
	once      sync.Once
	err       error         // why it stopped; written once before done closes
	lowWater  chan struct{} // a token when the DataChannel's queue drained
	drainedAt atomic.Int64  // when it last did, in Unix nanoseconds
	moved     atomic.Uint64 // messages copied either way, for inactivity
	pacer     *pacing.Pacer // paces what goes to the client; nil: nothing

	// set before copying starts, used by stop to unblock the copiers
	mu  sync.Mutex
	rwc datachannel.ReadWriteCloserDeadliner
	ws  *websocket.Conn
}

func newSession() *session {
	return &session{done: make(chan struct{}), lowWater: make(chan struct{}, 1)}
}

func (s *session) drained() {
	s.drainedAt.Store(time.Now().UnixNano())
	select {
	case s.lowWater <- struct{}{}:
	default:
	}
}

// stop ends the session: it unblocks both copiers by expiring their read
// deadlines. Safe from any goroutine, including pion callbacks.
func (s *session) stop(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.unblock()
	})
}

// unblock expires the deadlines of the attached connections; s.mu held.
func (s *session) unblock() {
	now := time.Now()
	if s.rwc != nil {
		s.rwc.SetReadDeadline(now)
	}
	if s.ws != nil {
		// Deadlines go on the socket itself: gorilla's SetWriteDeadline only
		// records a field that a concurrent WriteMessage reads (a data race),
		// while net.Conn deadlines are safe from any goroutine and unblock a
		// write in progress at once.
		s.ws.NetConn().SetReadDeadline(now)
		s.ws.NetConn().SetWriteDeadline(now)
	}
}

// attach records the connections stop must unblock; if the session has
// already stopped they are unblocked at once.
func (s *session) attach(rwc datachannel.ReadWriteCloserDeadliner, ws *websocket.Conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rwc, s.ws = rwc, ws
	select {
	case <-s.done:
		s.unblock()
	default:
	}
}

func (s *session) cause() error {
	<-s.done
	return s.err
}

// copy relays between the DataChannel and the relay until either ends, the
// peer connection fails, ctx ends or the session goes idle. The DataChannel
// writer runs in the calling goroutine, the relay reader and client→relay in
// one more each.
func (p *Proxy) copy(ctx context.Context, s *session, ch openedChannel, ws *websocket.Conn) error {
	s.attach(ch.rwc, ws)
	stopOnCancel := context.AfterFunc(ctx, func() { s.stop(ctx.Err()) })
	defer stopOnCancel()
	watchdog := p.watchInactivity(s)
	defer watchdog.Stop()

	// The two buffers of the relay→client hand-off change hands on every
	// batch, so both go back to the pool only once both sides have stopped.
	pending, spare := p.downBufs.Get().(*[]byte), p.downBufs.Get().(*[]byte)
	defer p.downBufs.Put(pending)
	defer p.downBufs.Put(spare)
	d := newDownstream(*pending)

	var wg sync.WaitGroup
	wg.Go(func() {
		s.stop(p.clientToRelay(ch.rwc, ws, s))
	})
	wg.Go(func() { p.readRelay(ws, d, s) })
	s.stop(p.relayToClient(d, *spare, ch, s))
	wg.Wait()
	// Best effort: tell the relay we are done.
	ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""),
		time.Now().Add(time.Second))
	err := s.cause()
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// watchInactivity stops s once no message has moved for InactivityTimeout
// (checked every quarter of it, so the session ends within 1¼ timeouts).
func (p *Proxy) watchInactivity(s *session) *time.Timer {
	period := p.s.InactivityTimeout / 4
	last := s.moved.Load()
	idle := time.Duration(0)
	var t *time.Timer
	var mu sync.Mutex // orders the callback's use of t, last and idle
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(period, func() {
		mu.Lock()
		defer mu.Unlock()
		select {
		case <-s.done:
			return // never re-arm once the session has ended
		default:
		}
		if now := s.moved.Load(); now != last {
			last, idle = now, 0
		} else if idle += period; idle >= p.s.InactivityTimeout {
			s.stop(ErrInactive)
			return
		}
		t.Reset(period)
	})
	return t
}

// clientToRelay copies DataChannel messages to the relay, one WebSocket
// binary message each.
func (p *Proxy) clientToRelay(rwc datachannel.ReadWriteCloserDeadliner, ws *websocket.Conn, s *session) error {
	bp := p.smallBufs.Get().(*[]byte)
	defer p.smallBufs.Put(bp)
	buf := *bp
	for {
		n, err := rwc.Read(buf)
		if errors.Is(err, io.ErrShortBuffer) {
			// A message larger than the small buffer: pion keeps it queued
			// and wants a bigger buffer (up to MaxMessageSize).
			err = p.copyLargeMessage(rwc, ws)
			if err != nil {
				return err
			}
			s.moved.Add(1)
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if err := ws.WriteMessage(websocket.BinaryMessage, buf[:n]); err != nil {
			return err
		}
		p.m.addFromClient(n)
		s.moved.Add(1)
	}
}

func (p *Proxy) copyLargeMessage(rwc datachannel.ReadWriteCloserDeadliner, ws *websocket.Conn) error {
	bp := p.largeBufs.Get().(*[]byte)
	defer p.largeBufs.Put(bp)
	n, err := rwc.Read(*bp)
	if errors.Is(err, io.ErrShortBuffer) {
		return errMessageTooLarge
	}
	if err != nil {
		return err
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, (*bp)[:n]); err != nil {
		return err
	}
	p.m.addFromClient(n)
	return nil
}
