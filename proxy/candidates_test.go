package proxy

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v5"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/common/webrtcnet"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/messages"
)

// answerCandidate is one "a=candidate:" line of an SDP, the fields these
// tests look at.
type answerCandidate struct {
	addr netip.Addr
	port uint16
	typ  string
	line string
}

func sdpCandidates(t testing.TB, desc string) []answerCandidate {
	t.Helper()
	var out []answerCandidate
	for line := range strings.Lines(desc) {
		line = strings.TrimRight(line, "\r\n")
		if !strings.HasPrefix(line, "a=candidate:") {
			continue
		}
		c, ok := sdp.ParseCandidate(line)
		fields := strings.Fields(line)
		if !ok || len(fields) < 6 {
			t.Fatalf("malformed candidate line %q", line)
		}
		port, err := strconv.ParseUint(fields[5], 10, 16)
		if err != nil {
			t.Fatalf("candidate port in %q: %v", line, err)
		}
		out = append(out, answerCandidate{addr: c.Address, port: uint16(port), typ: c.Type, line: line})
	}
	return out
}

// loopbackInterfaces limits gathering to loopback interfaces but leaves
// the proxy's IP filter as it is: the production address filter then runs
// on loopback addresses only.
func loopbackInterfaces(se *webrtc.SettingEngine) { webrtcnet.LoopbackInterfaces(se, nil) }

// testAnswer runs the proxy's answer path (remote offer, answer, gathering,
// local candidate filter) on the offer of c, without a broker. It returns
// the SDP pion gathered and the SDP the proxy would send. The peer
// connection only ever sends to the client's loopback candidates.
func testAnswer(t testing.TB, p *Proxy, c *testClient) (gathered, answer string) {
	t.Helper()
	gathered, answer, err := gatherAnswer(t, p, c)
	if err != nil {
		t.Fatal(err)
	}
	return gathered, answer
}

// gatherAnswer is testAnswer, returning localDescription's error.
func gatherAnswer(t testing.TB, p *Proxy, c *testClient) (gathered, answer string, err error) {
	t.Helper()
	offer, err := messages.DecodeSessionDescription(c.offer)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := p.newPeerConnection(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	if err := pc.SetRemoteDescription(webrtc.SessionDescription{Type: webrtc.SDPTypeOffer, SDP: offer.SDP}); err != nil {
		t.Fatal(err)
	}
	answer, err = p.localDescription(context.Background(), pc, webrtc.SDPTypeAnswer, 30*time.Second)
	return pc.LocalDescription().SDP, answer, err
}

func newTestProxy(t testing.TB, mod func(*Config)) *Proxy {
	t.Helper()
	cfg := Config{
		BrokerURL:           "http://127.0.0.1:1/",
		AllowedRelayPattern: "127.0.0.1:*$",
		AllowNonTLSRelay:    true,
		AllowPrivateRelay:   true,
		LoopbackOnly:        true,
	}
	mod(&cfg)
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEphemeralPortRange: with -ephemeral-ports-range the answer's host
// candidates use ports inside the range, and the session works.
func TestEphemeralPortRange(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	// pion tries every port of the range from a random start, so a port
	// taken by another process only moves it to the next one.
	const lo, hi = 41000, 41099
	e := startE2E(t, func(c *Config) { c.PortMin, c.PortMax = lo, hi })
	c := newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NextPoll: 20, RelayURL: e.relay.url()}
	ans := waitFor(t, e.answers, "the proxy's answer")
	desc, err := messages.DecodeSessionDescription(ans.Answer)
	if err != nil {
		t.Fatal(err)
	}
	cands := sdpCandidates(t, desc.SDP)
	if len(cands) == 0 {
		t.Fatalf("answer has no candidates:\n%s", desc.SDP)
	}
	for _, cand := range cands {
		if cand.port < lo || cand.port > hi {
			t.Errorf("candidate port %d outside %d:%d: %s", cand.port, lo, hi, cand.line)
		}
	}
	c.setAnswer(t, ans.Answer)
	rwc := waitFor(t, c.opened, "the data channel")
	rc := waitFor(t, e.relay.conns, "the relay connection")
	exchange(t, rwc, rc.ws)
	c.pc.Close()
	rc.ws.Close()
	e.stop()
	if s := e.proxy.Stats(); s.Connections != 1 || s.Failures != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestEphemeralPortRangeExhausted: when every port of the range is taken,
// pion gathers no candidate; the proxy sends no answer (the client's
// rendezvous times out at the broker and it tries another proxy), counts a
// failure at the answer stage, frees the slot and polls again. (The
// command warns at start when the range is narrower than twice the
// capacity; see cmd/flurry-proxy.)
func TestEphemeralPortRangeExhausted(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	hold, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	port := uint16(hold.LocalAddr().(*net.UDPAddr).Port)

	e := startE2E(t, func(c *Config) {
		c.PortMin, c.PortMax = port, port
	})
	c := newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NextPoll: 20, RelayURL: e.relay.url()}
	e.pollAfter(t, waitFor(t, e.matched, "the match"))
	e.stop()
	select {
	case ans := <-e.answers:
		t.Errorf("the proxy answered although port %d is taken: %s", port, ans.Answer)
	default:
	}
	if s := e.proxy.Stats(); s.Clients != 0 || s.Connections != 0 || s.Failures != 1 {
		t.Errorf("Stats = %+v, want one failure and no slot held", s)
	}
}

// TestOutboundAddressLoopback: -outbound-address replaces the address of
// every host candidate. 127.0.0.2 is on loopback but no proxy socket is
// bound to it, so the client can only reach the proxy through the peer
// reflexive candidate the proxy's own checks reveal: the session still
// works.
func TestOutboundAddressLoopback(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const outbound = "127.0.0.2"
	e := startE2E(t, func(c *Config) { c.OutboundAddress = outbound })
	c := newTestClient(t)
	e.offers <- messages.ProxyPollResponse{Status: messages.StatusClientMatch, Offer: c.offer, NextPoll: 20, RelayURL: e.relay.url()}
	ans := waitFor(t, e.answers, "the proxy's answer")
	desc, err := messages.DecodeSessionDescription(ans.Answer)
	if err != nil {
		t.Fatal(err)
	}
	cands := sdpCandidates(t, desc.SDP)
	if len(cands) == 0 {
		t.Fatalf("answer has no candidates:\n%s", desc.SDP)
	}
	for _, cand := range cands {
		if cand.typ != "host" || cand.addr.String() != outbound {
			t.Errorf("candidate %q, want host candidates at %s only", cand.line, outbound)
		}
	}
	c.setAnswer(t, ans.Answer)
	rwc := waitFor(t, c.opened, "the data channel")
	rc := waitFor(t, e.relay.conns, "the relay connection")
	exchange(t, rwc, rc.ws)
	c.pc.Close()
	rc.ws.Close()
	e.stop()
	if s := e.proxy.Stats(); s.Connections != 1 || s.Failures != 0 {
		t.Errorf("Stats = %+v", s)
	}
}

// TestOutboundAddressProductionPath: on the production path (no
// -loopback-only, no -keep-local-addresses) the host candidates gathered on
// a private or loopback interface are announced at the outbound address —
// the case the flag exists for: a host behind a 1:1 NAT whose public
// address is on no interface. Gathering is limited to loopback interfaces
// with the proxy's IP filter left in place. The answer is only inspected,
// never given to the client: the client must not send to 203.0.113.7.
func TestOutboundAddressProductionPath(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const outbound = "203.0.113.7"
	p := newTestProxy(t, func(c *Config) {
		c.LoopbackOnly = false
		c.OutboundAddress = outbound
		c.ConfigureSettingEngine = loopbackInterfaces
	})
	_, answer := testAnswer(t, p, newTestClient(t))
	cands := sdpCandidates(t, answer)
	if len(cands) == 0 {
		t.Fatalf("answer has no candidates:\n%s", answer)
	}
	for _, cand := range cands {
		if cand.typ != "host" || cand.addr.String() != outbound {
			t.Errorf("candidate %q, want host candidates at %s only", cand.line, outbound)
		}
	}
}

// TestAnswerStripsLocalCandidates: on the production path pion gathers the
// loopback candidates (gathering is limited to loopback interfaces, the
// proxy's SettingEngine otherwise as in production) and the answer filter
// removes them all, which leaves nothing worth sending (ErrNoPublicCandidate);
// with -keep-local-addresses or -loopback-only they are kept. (Stripping
// next to public candidates is common/sdp's test.)
func TestAnswerStripsLocalCandidates(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	tests := []struct {
		name        string
		mod         func(*Config)
		gatherLocal bool // pion gathers loopback candidates
		answerLocal bool // and they stay in the answer
	}{
		{name: "production", mod: func(c *Config) {
			c.LoopbackOnly = false
			c.ConfigureSettingEngine = loopbackInterfaces
		}, gatherLocal: true},
		{name: "keep local addresses", mod: func(c *Config) {
			c.LoopbackOnly = false
			c.KeepLocalAddresses = true
			c.ConfigureSettingEngine = func(se *webrtc.SettingEngine) { webrtcnet.LoopbackOnly(se, nil) }
		}, gatherLocal: true, answerLocal: true},
		{name: "loopback only", mod: func(c *Config) {}, gatherLocal: true, answerLocal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newTestProxy(t, tt.mod)
			gathered, answer, err := gatherAnswer(t, p, newTestClient(t))
			gc := sdpCandidates(t, gathered)
			if tt.gatherLocal && len(gc) == 0 {
				t.Fatalf("pion gathered no candidate, the filter is not exercised:\n%s", gathered)
			}
			for _, cand := range gc {
				if !cand.addr.IsLoopback() {
					t.Errorf("gathered a non-loopback candidate %q", cand.line)
				}
			}
			if !tt.answerLocal {
				if !errors.Is(err, ErrNoPublicCandidate) || answer != "" {
					t.Errorf("only local candidates: answer %q, error %v; want ErrNoPublicCandidate", answer, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			local := 0
			for _, cand := range sdpCandidates(t, answer) {
				if sdp.IsLocal(cand.addr) {
					local++
				}
			}
			if local == 0 || local != len(gc) {
				t.Errorf("answer has %d local candidates, want the %d gathered:\n%s", local, len(gc), answer)
			}
		})
	}
}

// TestServerReflexiveCandidate: on the production path a proxy whose only
// interface address is local (here 127.0.0.1, standing for a home
// router's 192.168.x) still announces the server reflexive address its
// STUN server reports. The STUN server is a fake on loopback; the answer
// is only inspected, never given to the client.
func TestServerReflexiveCandidate(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	public := netip.MustParseAddr("203.0.113.9")
	stunURL := stuntest.Start(t, public)
	p := newTestProxy(t, func(c *Config) {
		c.LoopbackOnly = false
		c.STUNURLs = []string{stunURL}
		c.ConfigureSettingEngine = loopbackInterfaces
	})
	gathered, answer := testAnswer(t, p, newTestClient(t))
	var srflx int
	for _, cand := range sdpCandidates(t, answer) {
		switch {
		case sdp.IsLocal(cand.addr):
			t.Errorf("local candidate in the answer: %s", cand.line)
		case cand.typ == "srflx" && cand.addr == public:
			srflx++
		default:
			t.Errorf("unexpected candidate %s", cand.line)
		}
	}
	if srflx == 0 {
		t.Errorf("no srflx candidate at %v in the answer; gathered:\n%s", public, gathered)
	}
}
