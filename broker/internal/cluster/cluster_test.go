package cluster

import (
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
		{"60000", time.Minute, true},
		{"199", 0, false},
		{"60001", 0, false},
		{"", 0, false},
		{"-5", 0, false},
		{"1e3", 0, false},
		{"99999999999999999999", 0, false},
	} {
		got, err := parseBudget(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseBudget(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
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
// like one from the network, whatever the bytes and budget.
func FuzzDecodeRequest(f *testing.F) {
	offer := `{"type":"offer","sdp":"v=0\r\na=candidate:1 1 udp 1 127.0.0.1 9 typ host\r\n"}`
	body, err := messages.ClientPollRequest{Offer: offer, NAT: messages.NATRestricted, Fingerprint: messages.DefaultBridgeFingerprint}.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(body, "4900", "_INBOX.x")
	f.Add([]byte("1.0\n{}"), "0", "")
	f.Add([]byte{}, "abc", "r")
	f.Fuzz(func(t *testing.T, data []byte, budget, reply string) {
		msg := &nats.Msg{Subject: "flurry.broker.want.r.x", Reply: reply, Data: data, Header: nats.Header{}}
		msg.Header.Set(budgetHeader, budget)
		req, d, err := decodeRequest(msg)
		if err != nil {
			return
		}
		if d < minBudget || d > maxBudget || reply == "" {
			t.Fatalf("accepted budget %v, reply %q", d, reply)
		}
		if _, err := req.Encode(); err != nil {
			t.Fatalf("accepted a request that does not encode: %v", err)
		}
	})
}
