package proxy

import (
	"errors"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/messages"
)

// TestRelayDialledBeforeDataChannel: the proxy opens the relay's WebSocket
// once it has answered, before the client has even applied the answer (so
// before any DataChannel can open), and then relays over that connection.
// If the DataChannel opens too late for a relay that waits only a few
// seconds for the client's token, the proxy dials the relay again and
// relays over the new connection.
func TestRelayDialledBeforeDataChannel(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	for _, late := range []bool{false, true} {
		e := startE2E(t, nil)
		c := newTestClient(t)
		e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NAT: "unknown", NextPoll: 20, RelayURL: e.relay.url()}
		ans := waitFor(t, e.answers, "the proxy's answer")
		early := waitFor(t, e.relay.conns, "the relay connection before the data channel")
		if late {
			time.Sleep(earlyRelayMaxAge + 200*time.Millisecond)
		}
		c.setAnswer(t, ans.Answer)
		rwc := waitFor(t, c.opened, "the data channel")
		rc := early
		if late {
			rc = waitFor(t, e.relay.conns, "a new relay connection")
			early.ws.SetReadDeadline(time.Now().Add(10 * time.Second))
			var ne net.Error
			if _, _, err := early.ws.ReadMessage(); err == nil || errors.As(err, &ne) && ne.Timeout() {
				t.Errorf("the stale relay connection is still open (read: %v)", err)
			}
			early.ws.Close()
		}
		exchange(t, rwc, rc.ws)
		c.pc.Close()
		rc.ws.Close()
		e.stop()
		if s := e.proxy.Stats(); s.Failures != 0 {
			t.Errorf("late=%v: Stats = %+v, want no failure", late, s)
		}
	}
}
