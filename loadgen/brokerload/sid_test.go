package brokerload

import (
	"bytes"
	"testing"

	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
	"github.com/flurrypt/flurry/messages"
)

// TestSidTemplate checks that patching the Sid gives the encoder's bytes.
func TestSidTemplate(t *testing.T) {
	cfg, err := BrokerConfig{URL: "http://127.0.0.1:1", RelayPattern: "^AAAAAAAAAAAAAAAAAAAAAA.example$"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	poll, err := cfg.pollTemplate(8, "webext", messages.NATRestricted)
	if err != nil {
		t.Fatal(err)
	}
	ans, err := brokerwire.AnswerTemplate()
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		var sid [brokerwire.SidLength]byte
		brokerwire.FillSid(&sid)
		if err := messages.ValidateSid(string(sid[:])); err != nil {
			t.Fatal(err)
		}
		pattern := cfg.RelayPattern
		want, err := messages.ProxyPollRequest{Sid: string(sid[:]), Type: "webext", NAT: messages.NATRestricted, Clients: 8, AcceptedRelayPattern: &pattern}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := poll.With(&sid); !bytes.Equal(got, want) {
			t.Errorf("poll %q, want %q", got, want)
		}
		want, err = messages.ProxyAnswerRequest{Sid: string(sid[:]), Answer: brokerwire.FixedAnswer}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if got := ans.With(&sid); !bytes.Equal(got, want) {
			t.Errorf("answer %q, want %q", got, want)
		}
	}
}
