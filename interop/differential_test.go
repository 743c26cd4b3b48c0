package interop

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/messages"
	sfenc "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake/v2/common/encapsulation"
	sfmsg "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake/v2/common/messages"
	sftt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake/v2/common/turbotunnel"
	sfutil "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake/v2/common/util"

	"github.com/pion/webrtc/v4"
)

// The differential tests encode random realistic values with both
// implementations' encoders, require identical bytes, decode them with both
// decoders and require the same accept/reject and the same fields.

const rounds = 2000

// gen makes realistic random field values.
type gen struct{ r *rand.Rand }

func newGen(t testing.TB) gen {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	return gen{rand.New(rand.NewPCG(seed, 1))}
}

func (g gen) pick(s ...string) string { return s[g.r.IntN(len(s))] }

func (g gen) token(n int, alphabet string) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (g gen) sid() string {
	return g.token(1+g.r.IntN(22), "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
}

func (g gen) nat() string {
	return g.pick("", messages.NATUnknown, messages.NATRestricted, messages.NATUnrestricted)
}

func (g gen) proxyType() string {
	return g.pick("", "standalone", "webext", "badge", "iptproxy", "bloco", "unknown", "my-proxy_2.0", "Standalone")
}

func (g gen) pattern() *string {
	if g.r.IntN(4) == 0 {
		return nil
	}
	p := g.pick("", "snowflake.torproject.net$", "^snowflake.torproject.net$", "^127.0.0.1$", "torproject.net$")
	return &p
}

// sdp returns a serialized session description like pion's, with
// candidates, CR LF line breaks and characters Go escapes.
func (g gen) sdp(typ string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "v=0\r\no=- %d 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n", g.r.Uint64()>>1)
	b.WriteString("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n")
	for range g.r.IntN(4) {
		fmt.Fprintf(&b, "a=candidate:%d 1 udp %d 192.0.2.%d %d typ host\r\n", g.r.Uint32(), g.r.Uint32()>>1, g.r.IntN(256), 1024+g.r.IntN(60000))
	}
	fmt.Fprintf(&b, "a=ice-ufrag:%s\r\na=ice-pwd:%s\r\n", g.token(16, "abcdefghijklmnopqrstuvwxyz"), g.token(32, "ABCDEFabcdef0123456789+/"))
	if g.r.IntN(8) == 0 {
		b.WriteString("a=x-note:<&>\"\u2028é\r\n")
	}
	s, err := messages.SessionDescription{Type: typ, SDP: b.String()}.Encode()
	if err != nil {
		panic(err)
	}
	return s
}

func (g gen) fingerprint() string {
	switch g.r.IntN(3) {
	case 0:
		return messages.DefaultBridgeFingerprint
	case 1:
		return g.token(40, "0123456789ABCDEF")
	}
	return g.token(64, "0123456789abcdef")
}

func sameBytes(t *testing.T, what string, ours, theirs []byte, oursErr, theirsErr error) {
	t.Helper()
	if oursErr != nil || theirsErr != nil {
		t.Fatalf("%s: encode errors: flurry %v, snowflake %v", what, oursErr, theirsErr)
	}
	if !bytes.Equal(ours, theirs) {
		t.Fatalf("%s: encoders differ:\nflurry    %s\nsnowflake %s", what, ours, theirs)
	}
}

func TestDifferentialProxyPollRequest(t *testing.T) {
	g := newGen(t)
	for range rounds {
		sid, typ, nat, clients, pat := g.sid(), g.proxyType(), g.nat(), g.r.IntN(40), g.pattern()
		ours, oerr := messages.ProxyPollRequest{Sid: sid, Type: typ, NAT: nat, Clients: clients, AcceptedRelayPattern: pat}.Encode()
		sreq := sfmsg.ProxyPollRequest{Sid: sid, Type: typ, NAT: nat, Clients: clients, AcceptedRelayPattern: pat}
		theirs, serr := sreq.Encode()
		sameBytes(t, "proxy poll request", ours, theirs, oerr, serr)
		checkProxyPollRequest(t, ours, true)
	}
}

// checkProxyPollRequest decodes b with both. With exact, both must accept
// and agree; otherwise Flurry may reject what Snowflake accepts (it checks
// more: Sid alphabet, sizes, UTF-8) but never the reverse, and where both
// accept they agree.
func checkProxyPollRequest(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeProxyPollRequest(b)
	s, serr := sfmsg.DecodeProxyPollRequest(b)
	if !agree(t, "proxy poll request", b, oerr, serr, exact) {
		return
	}
	if o.Sid != s.Sid || o.Type != s.Type || o.NAT != s.NAT || o.Clients != min(s.Clients, messages.MaxClients) ||
		(o.AcceptedRelayPattern == nil) != (s.AcceptedRelayPattern == nil) ||
		o.AcceptedRelayPattern != nil && *o.AcceptedRelayPattern != *s.AcceptedRelayPattern {
		t.Fatalf("proxy poll request %q:\nflurry    %+v\nsnowflake %+v", b, o, s)
	}
}

// agree compares two decoders' verdicts and reports whether both accepted.
func agree(t *testing.T, what string, b []byte, oerr, serr error, exact bool) bool {
	t.Helper()
	switch {
	case oerr == nil && serr != nil:
		t.Fatalf("%s %q: Flurry accepts what Snowflake rejects (%v)", what, b, serr)
	case exact && oerr != nil && serr == nil:
		t.Fatalf("%s %q: Flurry rejects (%v) what Snowflake accepts", what, b, oerr)
	}
	return oerr == nil && serr == nil
}

func TestDifferentialProxyPollResponse(t *testing.T) {
	g := newGen(t)
	for range rounds {
		r := messages.ProxyPollResponse{Status: g.pick(messages.StatusClientMatch, messages.StatusNoMatch), NAT: g.nat(), NextPoll: int64(g.r.IntN(3)) * 20000}
		if r.Status == messages.StatusClientMatch {
			r.Offer = g.sdp("offer")
			r.RelayURL = g.pick("", "wss://snowflake.torproject.net/", "ws://127.0.0.1:8080/")
		}
		ours, oerr := r.Encode()
		sresp := sfmsg.ProxyPollResponse{Status: r.Status, Offer: r.Offer, NAT: r.NAT, NextPoll: r.NextPoll, RelayURL: r.RelayURL}
		theirs, serr := sresp.Encode()
		sameBytes(t, "proxy poll response", ours, theirs, oerr, serr)
		checkProxyPollResponse(t, ours, true)
	}
	// Snowflake's broker's own constructor, as it answers a proxy.
	theirs, err := sfmsg.EncodePollResponseWithRelayURL("", false, "", "", sfmsg.ProxyClientNoMatch)
	if err != nil {
		t.Fatal(err)
	}
	checkProxyPollResponse(t, theirs, true)
}

func checkProxyPollResponse(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeProxyPollResponse(b)
	s, serr := sfmsg.DecodeProxyPollResponse(b)
	// Both report a status other than a match or no match as an error, and
	// still return the message.
	if errors.Is(oerr, messages.ErrIncorrectRelayPattern) || errors.Is(oerr, messages.ErrUnknownStatus) {
		if serr == nil || s == nil || s.Status != o.Status {
			t.Fatalf("proxy poll response %q: Flurry %v, Snowflake %v", b, oerr, serr)
		}
		return
	}
	if !agree(t, "proxy poll response", b, oerr, serr, exact) {
		return
	}
	nat := s.NAT
	if nat != messages.NATRestricted && nat != messages.NATUnrestricted {
		nat = messages.NATUnknown // ours maps types it does not know to unknown
	}
	if o.Status != s.Status || o.Offer != s.Offer || o.NAT != nat || o.NextPoll != min(max(s.NextPoll, 0), messages.MaxNextPoll) || o.RelayURL != s.RelayURL {
		t.Fatalf("proxy poll response %q:\nflurry    %+v\nsnowflake %+v", b, o, s)
	}
}

func TestDifferentialProxyAnswer(t *testing.T) {
	g := newGen(t)
	for range rounds {
		sid, answer := g.sid(), g.sdp("answer")
		ours, oerr := messages.ProxyAnswerRequest{Sid: sid, Answer: answer}.Encode()
		theirs, serr := sfmsg.EncodeAnswerRequest(answer, sid)
		sameBytes(t, "answer request", ours, theirs, oerr, serr)
		checkAnswerRequest(t, ours, true)

		success := g.r.IntN(2) == 0
		status := messages.StatusClientGone
		if success {
			status = messages.StatusSuccess
		}
		ours, oerr = messages.ProxyAnswerResponse{Status: status}.Encode()
		theirs, serr = sfmsg.EncodeAnswerResponse(success)
		sameBytes(t, "answer response", ours, theirs, oerr, serr)
		checkAnswerResponse(t, ours, true)
	}
}

func checkAnswerRequest(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeProxyAnswerRequest(b)
	s, serr := sfmsg.DecodeProxyAnswerRequest(b)
	if agree(t, "answer request", b, oerr, serr, exact) && (o.Sid != s.Sid || o.Answer != s.Answer) {
		t.Fatalf("answer request %q:\nflurry    %+v\nsnowflake %+v", b, o, s)
	}
}

func checkAnswerResponse(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeProxyAnswerResponse(b)
	s, serr := sfmsg.DecodeAnswerResponse(b)
	if errors.Is(oerr, messages.ErrUnknownStatus) {
		// Snowflake's proxy reads any other status as "client gone".
		if serr != nil || s {
			t.Fatalf("answer response %q: Flurry %v, Snowflake %v %v", b, oerr, s, serr)
		}
		return
	}
	if agree(t, "answer response", b, oerr, serr, exact) && (o.Status == messages.StatusSuccess) != s {
		t.Fatalf("answer response %q: flurry %+v, snowflake success=%v", b, o, s)
	}
}

func TestDifferentialClientPoll(t *testing.T) {
	g := newGen(t)
	for range rounds {
		offer, nat, fp := g.sdp("offer"), g.nat(), g.fingerprint()
		ours, oerr := messages.ClientPollRequest{Offer: offer, NAT: nat, Fingerprint: fp}.Encode()
		sreq := sfmsg.ClientPollRequest{Offer: offer, NAT: nat, Fingerprint: fp}
		theirs, serr := sreq.EncodeClientPollRequest()
		sameBytes(t, "client poll request", ours, theirs, oerr, serr)
		checkClientPollRequest(t, ours, true)

		// The legacy format: the bare offer, NAT in a header.
		checkLegacyClientPoll(t, []byte(offer), nat, true)

		var r messages.ClientPollResponse
		if g.r.IntN(2) == 0 {
			r.Answer = g.sdp("answer")
		} else {
			r.Error = g.pick(messages.StrNoProxies, messages.StrTimedOut, messages.StrUnknownBridge,
				"malformed session description: invalid SDP type", "invalid NAT type")
		}
		ours, oerr = r.Encode()
		sresp := sfmsg.ClientPollResponse{Answer: r.Answer, Error: r.Error}
		theirs, serr = sresp.EncodePollResponse()
		sameBytes(t, "client poll response", ours, theirs, oerr, serr)
		checkClientPollResponse(t, ours, true)
	}
}

func checkClientPollRequest(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeClientPollRequest(b)
	s, serr := sfmsg.DecodeClientPollRequest(b)
	if oerr != nil && serr != nil && oerr.Error() != serr.Error() && !errors.Is(oerr, messages.ErrTooLarge) &&
		!strings.Contains(oerr.Error(), "control character") && !strings.Contains(oerr.Error(), "UTF-8") &&
		!strings.Contains(oerr.Error(), "longer than") {
		// The client reads this text: it must be Snowflake's, whole.
		t.Fatalf("client poll request %q: error %q, Snowflake says %q", b, oerr, serr)
	}
	if agree(t, "client poll request", b, oerr, serr, exact) && (o.Offer != s.Offer || o.NAT != s.NAT || o.Fingerprint != s.Fingerprint) {
		t.Fatalf("client poll request %q:\nflurry    %+v\nsnowflake %+v", b, o, *s)
	}
}

// checkLegacyClientPoll decodes a legacy body as each broker does: ours
// directly, Snowflake's by shimming it into a 1.0 request.
func checkLegacyClientPoll(t *testing.T, body []byte, natHeader string, exact bool) {
	t.Helper()
	if !messages.IsLegacyClientPoll(body) {
		return
	}
	o, oerr := messages.DecodeLegacyClientPoll(body, natHeader)
	shim := sfmsg.ClientPollRequest{Offer: string(body), NAT: natHeader}
	enc, err := shim.EncodeClientPollRequest()
	if err != nil {
		t.Fatal(err)
	}
	s, serr := sfmsg.DecodeClientPollRequest(enc)
	if agree(t, "legacy client poll", body, oerr, serr, exact) && (o.Offer != s.Offer || o.NAT != s.NAT || o.Fingerprint != s.Fingerprint) {
		t.Fatalf("legacy client poll %q:\nflurry    %+v\nsnowflake %+v", body, o, *s)
	}
}

func checkClientPollResponse(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeClientPollResponse(b)
	s, serr := sfmsg.DecodeClientPollResponse(b)
	if agree(t, "client poll response", b, oerr, serr, exact) && (o.Answer != s.Answer || o.Error != s.Error) {
		t.Fatalf("client poll response %q:\nflurry    %+v\nsnowflake %+v", b, o, *s)
	}
}

func TestDifferentialSessionDescription(t *testing.T) {
	g := newGen(t)
	for range rounds {
		typ := g.pick("offer", "answer", "pranswer", "rollback")
		ours := g.sdp(typ)
		d, err := messages.DecodeSessionDescription(ours)
		if err != nil {
			t.Fatal(err)
		}
		theirs, err := sfutil.SerializeSessionDescription(&webrtc.SessionDescription{Type: webrtc.NewSDPType(typ), SDP: d.SDP})
		sameBytes(t, "session description", []byte(ours), []byte(theirs), nil, err)
		checkSessionDescription(t, []byte(ours), true)
	}
	// Keys match exactly in both, whatever encoding/json's folding would do.
	for _, s := range []string{`{"Type":"offer","SDP":""}`, `{"type":"offer","ſdp":""}`, `{"\u0074ype":"offer","sdp":""}`,
		`{"type":"offer","sdp":"","Type":"answer"}`, `{"type":null,"sdp":""}`, `{"type":"Offer","sdp":""}`, `[]`, `null`} {
		checkSessionDescription(t, []byte(s), true)
	}
}

// checkSessionDescription decodes b with both; the error texts (which a
// client reads after "malformed session description: ") must be equal.
func checkSessionDescription(t *testing.T, b []byte, exact bool) {
	t.Helper()
	o, oerr := messages.DecodeSessionDescription(string(b))
	s, serr := sfutil.DeserializeSessionDescription(string(b))
	if oerr != nil && serr != nil && exact && oerr.Error() != "malformed session description: "+serr.Error() {
		t.Fatalf("session description %q: error %q, Snowflake's %q", b, oerr, serr)
	}
	if agree(t, "session description", b, oerr, serr, exact) && (o.Type != s.Type.String() || o.SDP != s.SDP) {
		t.Fatalf("session description %q:\nflurry    %+v\nsnowflake %+v", b, o, s)
	}
}

func TestDifferentialEncapsulation(t *testing.T) {
	g := newGen(t)
	sizes := []int{0, 1, 62, 63, 64, 65, 8190, 8191, 8192, 8193, 65535, 1 << 20}
	for range 200 {
		sizes = append(sizes, g.r.IntN(70000))
	}
	for _, n := range sizes {
		data := make([]byte, n)
		for i := range data {
			data[i] = byte(g.r.Uint32())
		}
		var ours, theirs bytes.Buffer
		_, oerr := encapsulation.WriteData(&ours, data)
		_, serr := sfenc.WriteData(&theirs, data)
		if (oerr == nil) != (serr == nil) {
			t.Fatalf("WriteData(%d bytes): flurry %v, snowflake %v", n, oerr, serr)
		}
		if oerr != nil {
			continue
		}
		if n > 0 {
			var op, sp bytes.Buffer
			_, oerr = encapsulation.WritePadding(&op, n)
			_, serr = sfenc.WritePadding(&sp, n)
			sameBytes(t, fmt.Sprintf("WritePadding(%d)", n), op.Bytes(), sp.Bytes(), oerr, serr)
			ours.Write(op.Bytes())
			theirs.Write(sp.Bytes())
		}
		sameBytes(t, fmt.Sprintf("WriteData(%d bytes)", n), ours.Bytes(), theirs.Bytes(), nil, nil)
		checkReadData(t, ours.Bytes())
	}
}

// checkReadData reads b with both ReadData loops until an error: they must
// return the same data and fail at the same frame (what a failing call
// returns besides the error differs: Snowflake counts a truncated frame's
// partial bytes, Flurry returns 0; callers drop both).
func checkReadData(t *testing.T, b []byte) {
	t.Helper()
	or, sr := bytes.NewReader(b), bytes.NewReader(b)
	obuf, sbuf := make([]byte, 70000), make([]byte, 70000)
	for {
		on, oerr := encapsulation.ReadData(or, obuf)
		sn, serr := sfenc.ReadData(sr, sbuf)
		if (oerr == nil) != (serr == nil) || oerr == nil && (on != sn || !bytes.Equal(obuf[:on], sbuf[:sn]) || or.Len() != sr.Len()) {
			t.Fatalf("ReadData(% x...): flurry %d %v, snowflake %d %v (left %d, %d)", b[:min(len(b), 8)], on, oerr, sn, serr, or.Len(), sr.Len())
		}
		if oerr != nil {
			return
		}
	}
}

func TestDifferentialTurbotunnel(t *testing.T) {
	if turbotunnel.Token != sftt.Token {
		t.Fatalf("token % x, Snowflake's % x", turbotunnel.Token, sftt.Token)
	}
	for range 100 {
		id := sftt.NewClientID()
		ours := turbotunnel.ClientID(id)
		if ours.String() != id.String() || ours.Network() != id.Network() {
			t.Fatalf("ClientID %s/%s, Snowflake's %s/%s", ours, ours.Network(), id, id.Network())
		}
	}
}

// FuzzDecoders feeds the same bytes to both implementations' decoders of
// every message and of the encapsulation framing. Flurry may refuse what
// Snowflake takes (it validates more), never the reverse, and where both
// accept they agree on every field.
func FuzzDecoders(f *testing.F) {
	g := newGen(f)
	for range 4 {
		b, _ := messages.ProxyPollRequest{Sid: g.sid(), Type: g.proxyType(), NAT: g.nat(), AcceptedRelayPattern: g.pattern()}.Encode()
		f.Add(b)
		b, _ = messages.ClientPollRequest{Offer: g.sdp("offer"), NAT: g.nat()}.Encode()
		f.Add(b)
		f.Add([]byte(g.sdp("offer")))
	}
	for _, s := range []string{`{"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"\"}","NAT":"open"}`,
		`{"Status":"success"}`, `{"answer":"{\"type\":\"answer\",\"sdp\":\"\"}"}`, "1.0\n{\"offer\":\"{\\\"Type\\\":\\\"offer\\\",\\\"sdp\\\":\\\"\\\"}\"}",
		"\x05hello\x40\x01", `{"Version":"1.3","Sid":"a","Answer":"{\"type\":\"answer\",\"sdp\":\"x\"}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		checkProxyPollRequest(t, b, false)
		checkProxyPollResponse(t, b, false)
		checkAnswerRequest(t, b, false)
		checkAnswerResponse(t, b, false)
		checkClientPollRequest(t, b, false)
		checkClientPollResponse(t, b, false)
		checkLegacyClientPoll(t, b, "", false)
		checkSessionDescription(t, b, false)
		checkReadData(t, b)
	})
}
