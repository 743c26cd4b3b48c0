package proxy

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/messages"
)

// recordHandler passes every log record, with the attributes of its
// logger, to a channel.
type recordHandler struct {
	records chan string
	attrs   []slog.Attr
}

func newRecordHandler() *recordHandler { return &recordHandler{records: make(chan string, 256)} }

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &recordHandler{records: h.records, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	for _, a := range h.attrs {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
	}
	r.Attrs(func(a slog.Attr) bool {
		fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		return true
	})
	select {
	case h.records <- b.String():
	default:
	}
	return nil
}

// waitLog returns the first record starting with msg; every record read
// on the way is passed to seen.
func waitLog(t testing.TB, h *recordHandler, msg string, seen func(string)) string {
	t.Helper()
	for {
		r := waitFor(t, h.records, "log line "+msg)
		if seen != nil {
			seen(r)
		}
		if strings.HasPrefix(r, msg) {
			return r
		}
	}
}

// TestPeerTextNotLogged: an offer whose SDP pion refuses (pion's error
// quotes the line) fails the session with a fixed text in the log.
func TestPeerTextNotLogged(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	h := newRecordHandler()
	e := startE2E(t, func(c *Config) { c.Logger = slog.New(h) })
	sdp := "v=0\r\no=- 1 1 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN PEERTEXT-from-the-offer 0.0.0.0\r\n"
	offer, err := messages.SessionDescription{Type: messages.SDPTypeOffer, SDP: sdp}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: offer, NextPoll: 20, RelayURL: e.relay.url()}
	check := func(r string) {
		if strings.Contains(r, "PEERTEXT") {
			t.Errorf("peer text in the log: %s", r)
		}
	}
	r := waitLog(t, h, "client session failed", check)
	if !strings.Contains(r, ErrBadOffer.Error()) {
		t.Errorf("failure logged as %q, want %q", r, ErrBadOffer)
	}
	e.stop()
	for {
		select {
		case r := <-h.records:
			check(r)
		default:
			return
		}
	}
}

// TestInactivityTimeout: a session in which nothing moves either way is
// ended by the proxy (client and relay both still there), and the reason
// logged is inactivity.
func TestInactivityTimeout(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	h := newRecordHandler()
	e := startE2E(t, func(c *Config) {
		c.InactivityTimeout = 2 * time.Second
		c.Logger = slog.New(h)
	})
	_, rwc, rc := e.connect(t, e.relay.url())
	_ = rc.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, _, err := rc.ws.ReadMessage(); err == nil {
		t.Fatal("relay got a message from an idle session")
	}
	buf := make([]byte, 100)
	for {
		if _, err := rwc.Read(buf); err != nil {
			break // the proxy closed the data channel too
		}
	}
	r := waitLog(t, h, "client session ended", nil)
	if !strings.Contains(r, ErrInactive.Error()) {
		t.Errorf("session ended with %q, want %q", r, ErrInactive)
	}
	rc.ws.Close()
}

// switchRelay is a relay that refuses WebSocket upgrades while down.
type switchRelay struct {
	*testRelay
	up atomic.Bool
}

func newSwitchRelay(t testing.TB) *switchRelay {
	r := &switchRelay{testRelay: newTestRelay(t)}
	inner := r.srv.Config.Handler
	r.srv.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if !r.up.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		inner.ServeHTTP(w, req)
	})
	return r
}

// TestDefaultRelayRecheck: a default relay that is down at start is
// checked again until it answers, and then serves clients the broker names
// no relay for; when it goes down again, the periodic re-check notices and
// such clients are refused without an answer.
func TestDefaultRelayRecheck(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	h := newRecordHandler()
	relay := newSwitchRelay(t)
	defer relay.srv.Close()
	e := startE2E(t, func(c *Config) {
		c.RelayURL = relay.url()
		c.RelayRetryInterval = 50 * time.Millisecond
		c.RelayRecheckInterval = 500 * time.Millisecond
		c.Logger = slog.New(h)
	})
	waitLog(t, h, "default relay unreachable", nil)

	// Down: a client without a relay URL fails at the relay stage.
	c := newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NextPoll: 20}
	if r := waitLog(t, h, "client session failed", nil); !strings.Contains(r, "stage="+FailRelay) {
		t.Errorf("with the default relay down: %s", r)
	}

	relay.up.Store(true)
	waitLog(t, h, "default relay reachable again", nil)
	c = newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NextPoll: 20}
	c.setAnswer(t, waitFor(t, e.answers, "the proxy's answer").Answer)
	rwc := waitFor(t, c.opened, "the data channel")
	if _, err := rwc.Write([]byte("through the default relay")); err != nil {
		t.Fatal(err)
	}
	for found := false; !found; { // the first connections may be checks
		rc := waitFor(t, relay.conns, "the session's relay connection")
		_ = rc.ws.SetReadDeadline(time.Now().Add(30 * time.Second))
		_, msg, err := rc.ws.ReadMessage() // a check's connection is closed at once
		found = err == nil && string(msg) == "through the default relay"
		rc.ws.Close()
	}

	relay.up.Store(false)
	waitLog(t, h, "default relay unreachable", nil)
	e.stop()
	for {
		select {
		case rc := <-relay.conns:
			rc.ws.Close()
		default:
			return
		}
	}
}
