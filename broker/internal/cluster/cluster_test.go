package cluster

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/messages"
)

func TestParseBudget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"4900", 4900 * time.Millisecond, true},
		{"200", 200 * time.Millisecond, true},
		{"5000", 5 * time.Second, true},
		// Capped at the client timeout, however much is claimed.
		{"5001", 5 * time.Second, true},
		{"60000", 5 * time.Second, true},
		{"999999", 5 * time.Second, true},
		{"199", 0, false},
		{"1000000", 0, false},
		{"", 0, false},
		{"-5", 0, false},
		{"1e3", 0, false},
		{"99999999999999999999", 0, false},
	} {
		got, err := parseBudget(tc.in, 5*time.Second)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBudget(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

func TestValidReply(t *testing.T) {
	for s, want := range map[string]bool{
		"_INBOX.abc":                  true,
		"_INBOX.abc.def":              true,
		"_INBOX.":                     false,
		"":                            false,
		"flurry.broker.answer.00":     false,
		"_INBOX.*":                    false,
		"_INBOX.>":                    false,
		"_INBOX.a b":                  false,
		"_INBOX.a\x00":                false,
		"_INBOX.a\x7f":                false,
		"_INBOX." + string(rune(233)): false,
		"_INBOX." + strings.Repeat("a", maxReplySubject-len(inboxPrefix)):   true,
		"_INBOX." + strings.Repeat("a", maxReplySubject-len(inboxPrefix)+1): false,
	} {
		if validReply(s) != want {
			t.Errorf("validReply(%q) = %v", s, !want)
		}
	}
}

// TestDecodeChecks: a request's offer and a reply's answer go through the
// broker's checks, and a body over messages.MaxBodySize is refused.
func TestDecodeChecks(t *testing.T) {
	offer := `{"type":"offer","sdp":"v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"}`
	body, err := messages.ClientPollRequest{Offer: offer, NAT: messages.NATRestricted}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("refused")
	msg := &nats.Msg{Subject: "flurry.broker.want.r.x", Reply: "_INBOX.x", Data: body, Header: nats.Header{}}
	msg.Header.Set(budgetHeader, "4900")
	if _, _, err := decodeRequest(msg, time.Second, func(string) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("offer check ignored: %v", err)
	}
	req, d, err := decodeRequest(msg, time.Second, func(string) error { return nil })
	if err != nil || req.Offer != offer || d != time.Second {
		t.Errorf("decodeRequest = %+v, %v, %v", req, d, err)
	}
	msg.Data = append(append([]byte{}, body...), make([]byte, messages.MaxBodySize)...)
	if _, _, err := decodeRequest(msg, time.Second, func(string) error { return nil }); !errors.Is(err, messages.ErrTooLarge) {
		t.Errorf("oversized request: %v", err)
	}

	answer := `{"type":"answer","sdp":"v=0\r\n"}`
	reply, err := messages.ClientPollResponse{Answer: answer}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeReply(reply, func(string) error { return refuse }); !errors.Is(err, refuse) {
		t.Errorf("answer check ignored: %v", err)
	}
	if resp, err := decodeReply(reply, func(string) error { return nil }); err != nil || resp.Answer != answer {
		t.Errorf("decodeReply = %+v, %v", resp, err)
	}
	noProxies, err := messages.ClientPollResponse{Error: messages.StrNoProxies}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := decodeReply(noProxies, func(string) error { return refuse }); err != nil {
		t.Errorf("an error reply has no answer to check: %v", err)
	}
}

func TestExposure(t *testing.T) {
	for _, tc := range []struct {
		cfg    Config
		want   Exposure
		remote string
		ok     bool
	}{
		{Config{URL: "nats://127.0.0.1:4222"}, Protected, "", true},
		{Config{URL: "nats://[::1]:4222,localhost"}, Protected, "", true},
		{Config{URL: "nats://192.0.2.1:4222"}, Open, "192.0.2.1:4222", true},
		{Config{URL: "127.0.0.1:4222,192.0.2.1"}, Open, "192.0.2.1", true},
		{Config{URL: "nats://[::ffff:192.0.2.1]:4222"}, Open, "[::ffff:192.0.2.1]:4222", true},
		{Config{URL: "nats://u:p@192.0.2.1:4222"}, Readable, "192.0.2.1:4222", true},
		{Config{URL: "nats://192.0.2.1", CredsFile: "c"}, Readable, "192.0.2.1", true},
		{Config{URL: "nats://192.0.2.1", NKeyFile: "k"}, Readable, "192.0.2.1", true},
		{Config{URL: "tls://192.0.2.1"}, Protected, "192.0.2.1", true},
		{Config{URL: "WSS://192.0.2.1"}, Protected, "192.0.2.1", true},
		{Config{URL: "nats://192.0.2.1", TLSCAFile: "ca"}, Protected, "192.0.2.1", true},
		{Config{URL: "http://127.0.0.1"}, Open, "", false},
		{Config{URL: "nats://%zz"}, Open, "", false},
	} {
		got, remote, err := tc.cfg.Exposure()
		if (err == nil) != tc.ok || got != tc.want || remote != tc.remote {
			t.Errorf("Exposure(%q) = %v, %q, %v; want %v, %q, ok %v", tc.cfg.URL, got, remote, err, tc.want, tc.remote, tc.ok)
		}
	}
}

func TestSubjects(t *testing.T) {
	fp := "2b280b23e1107bb62abfc40ddcc8824814f80a72"
	if got := wantSubject(matcher.NATUnknown, fp); got != "flurry.broker.want.r."+fp {
		t.Errorf("unknown NAT: %q", got)
	}
	if got := wantSubject(matcher.NATUnrestricted, fp); got != "flurry.broker.want.u."+fp {
		t.Errorf("unrestricted NAT: %q", got)
	}
	// Every sid byte messages allows becomes a single subject token.
	if got := answerSubject("a+/=-_.Z"); got != "flurry.broker.answer.612b2f3d2d5f2e5a" {
		t.Errorf("answer subject: %q", got)
	}
}

func TestValidInstance(t *testing.T) {
	for s, want := range map[string]bool{"b1": true, "broker-2.eu_west": true, "": false, "a b": false, "a*": false, string(make([]byte, 65)): false} {
		if ValidInstance(s) != want {
			t.Errorf("ValidInstance(%q) = %v", s, !want)
		}
	}
}

// FuzzDecodeRequest: a client poll from another instance is validated
// like one from the network, whatever the bytes, budget and reply subject.
func FuzzDecodeRequest(f *testing.F) {
	offer := `{"type":"offer","sdp":"v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"}`
	body, err := messages.ClientPollRequest{Offer: offer, NAT: messages.NATRestricted, Fingerprint: messages.DefaultBridgeFingerprint}.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body, "4900", "_INBOX.x")
	f.Add(body, "60000", "_INBOX.x")
	f.Add([]byte("1.0\n{}"), "0", "")
	f.Add([]byte{}, "abc", "r")
	const maxBudget = 5 * time.Second
	f.Fuzz(func(t *testing.T, data []byte, budget, reply string) {
		msg := &nats.Msg{Subject: "flurry.broker.want.r.x", Reply: reply, Data: data, Header: nats.Header{}}
		msg.Header.Set(budgetHeader, budget)
		checked := false
		req, d, err := decodeRequest(msg, maxBudget, func(string) error { checked = true; return nil })
		if err != nil {
			return
		}
		if d < minBudget || d > maxBudget || !validReply(reply) || !checked {
			t.Fatalf("accepted budget %v, reply %q, offer checked %v", d, reply, checked)
		}
		if _, err := req.Encode(); err != nil {
			t.Fatalf("accepted a request that does not encode: %v", err)
		}
	})
}
