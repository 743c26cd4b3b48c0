package messages

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// readGolden returns the bytes of testdata/name.
func readGolden(tb testing.TB, name string) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func strPtr(s string) *string { return &s }

const goldenSid = "q0Dq3Cq4t2o0kB4QeWm2Vw"

// goldenOffer and goldenAnswer are the session descriptions of the vectors.
func goldenOffer(tb testing.TB) string  { return string(readGolden(tb, "sdp-offer.json")) }
func goldenAnswer(tb testing.TB) string { return string(readGolden(tb, "sdp-answer.json")) }

type encoder interface{ Encode() ([]byte, error) }

func TestGoldenEncode(t *testing.T) {
	offer, answer := goldenOffer(t), goldenAnswer(t)
	tests := []struct {
		file string
		msg  encoder
	}{
		{"proxy-poll-request-1.3.json", ProxyPollRequest{Sid: goldenSid, Type: ProxyTypeStandalone, NAT: NATUnrestricted, Clients: 8, AcceptedRelayPattern: strPtr("snowflake.torproject.net$")}},
		{"proxy-poll-request-legacy-empty-pattern.json", ProxyPollRequest{Sid: goldenSid, Version: "1.0", Type: ProxyTypeWebExt, NAT: NATRestricted, AcceptedRelayPattern: strPtr("")}},
		{"proxy-poll-response-match.json", ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnrestricted, NextPoll: 20000, RelayURL: "wss://snowflake.torproject.net/"}},
		{"proxy-poll-response-nomatch.json", ProxyPollResponse{Status: StatusNoMatch, NextPoll: 20000}},
		{"proxy-poll-response-incorrect-relay-pattern.json", ProxyPollResponse{Status: StatusIncorrectRelayPattern, NextPoll: 3600000}},
		{"proxy-answer-request.json", ProxyAnswerRequest{Sid: goldenSid, Answer: answer}},
		{"proxy-answer-response-success.json", ProxyAnswerResponse{Status: StatusSuccess}},
		{"proxy-answer-response-client-gone.json", ProxyAnswerResponse{Status: StatusClientGone}},
		{"client-poll-request-1.0.txt", ClientPollRequest{Offer: offer, NAT: NATUnrestricted}},
		{"client-poll-request-1.0-fingerprint.txt", ClientPollRequest{Offer: offer, NAT: NATRestricted, Fingerprint: "8838024498816A039FCBBAB14E6F40A0843051FA"}},
		{"client-poll-response-answer.json", ClientPollResponse{Answer: answer}},
		{"client-poll-response-no-proxies.json", ClientPollResponse{Error: StrNoProxies}},
		{"client-poll-response-timeout.json", ClientPollResponse{Error: StrTimedOut}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := tt.msg.Encode()
			if err != nil {
				t.Fatalf("Encode: %v", err)
			}
			if want := readGolden(t, tt.file); !bytes.Equal(got, want) {
				t.Errorf("Encode mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestGoldenSessionDescription(t *testing.T) {
	for _, name := range []string{"sdp-offer.json", "sdp-answer.json"} {
		t.Run(name, func(t *testing.T) {
			want := string(readGolden(t, name))
			d, err := DecodeSessionDescription(want)
			if err != nil {
				t.Fatal(err)
			}
			if name == "sdp-offer.json" && d.Type != SDPTypeOffer || name == "sdp-answer.json" && d.Type != SDPTypeAnswer {
				t.Errorf("type = %q", d.Type)
			}
			if len(d.SDP) < 100 || d.SDP[:5] != "v=0\r\n" {
				t.Errorf("sdp = %q", d.SDP)
			}
			got, err := d.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("Encode mismatch\n got: %s\nwant: %s", got, want)
			}
		})
	}
}

func TestGoldenDecode(t *testing.T) {
	offer, answer := goldenOffer(t), goldenAnswer(t)
	tests := []struct {
		file    string
		decode  func([]byte) (any, error)
		want    any
		wantErr error
	}{
		{"proxy-poll-request-1.3.json", decodeAny(DecodeProxyPollRequest),
			ProxyPollRequest{Sid: goldenSid, Version: "1.3", Type: ProxyTypeStandalone, NAT: NATUnrestricted, Clients: 8, AcceptedRelayPattern: strPtr("snowflake.torproject.net$")}, nil},
		{"proxy-poll-request-legacy-empty-pattern.json", decodeAny(DecodeProxyPollRequest),
			ProxyPollRequest{Sid: goldenSid, Version: "1.3", Type: ProxyTypeWebExt, NAT: NATRestricted, AcceptedRelayPattern: strPtr("")}, nil},
		{"proxy-poll-response-match.json", decodeAny(DecodeProxyPollResponse),
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnrestricted, NextPoll: 20000, RelayURL: "wss://snowflake.torproject.net/"}, nil},
		{"proxy-poll-response-nomatch.json", decodeAny(DecodeProxyPollResponse),
			ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown, NextPoll: 20000}, nil},
		{"proxy-poll-response-incorrect-relay-pattern.json", decodeAny(DecodeProxyPollResponse),
			ProxyPollResponse{Status: StatusIncorrectRelayPattern, NAT: NATUnknown, NextPoll: 3600000}, ErrIncorrectRelayPattern},
		{"proxy-answer-request.json", decodeAny(DecodeProxyAnswerRequest),
			ProxyAnswerRequest{Version: "1.3", Sid: goldenSid, Answer: answer}, nil},
		{"proxy-answer-response-success.json", decodeAny(DecodeProxyAnswerResponse), ProxyAnswerResponse{Status: StatusSuccess}, nil},
		{"proxy-answer-response-client-gone.json", decodeAny(DecodeProxyAnswerResponse), ProxyAnswerResponse{Status: StatusClientGone}, nil},
		{"client-poll-request-1.0.txt", decodeAny(DecodeClientPollRequest),
			ClientPollRequest{Offer: offer, NAT: NATUnrestricted, Fingerprint: DefaultBridgeFingerprint}, nil},
		{"client-poll-request-1.0-fingerprint.txt", decodeAny(DecodeClientPollRequest),
			ClientPollRequest{Offer: offer, NAT: NATRestricted, Fingerprint: "8838024498816A039FCBBAB14E6F40A0843051FA"}, nil},
		{"client-poll-response-answer.json", decodeAny(DecodeClientPollResponse), ClientPollResponse{Answer: answer}, nil},
		{"client-poll-response-no-proxies.json", decodeAny(DecodeClientPollResponse), ClientPollResponse{Error: StrNoProxies}, nil},
		{"client-poll-response-timeout.json", decodeAny(DecodeClientPollResponse), ClientPollResponse{Error: StrTimedOut}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			got, err := tt.decode(readGolden(t, tt.file))
			if !errors.Is(err, tt.wantErr) || (err == nil) != (tt.wantErr == nil) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestGoldenLegacyClientPoll feeds the bare offer vector to the legacy path.
func TestGoldenLegacyClientPoll(t *testing.T) {
	body := readGolden(t, "sdp-offer.json")
	if !IsLegacyClientPoll(body) {
		t.Fatal("IsLegacyClientPoll(offer) = false")
	}
	if IsLegacyClientPoll(readGolden(t, "client-poll-request-1.0.txt")) {
		t.Fatal("IsLegacyClientPoll(1.0 request) = true")
	}
	got, err := DecodeLegacyClientPoll(body, NATRestricted)
	if err != nil {
		t.Fatal(err)
	}
	want := ClientPollRequest{Offer: string(body), NAT: NATRestricted, Fingerprint: DefaultBridgeFingerprint}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// Re-encoded as the broker does internally, it is the 1.0 vector with NAT
	// restricted.
	enc, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if back, err := DecodeClientPollRequest(enc); err != nil || back != want {
		t.Errorf("re-decoded %+v, %v", back, err)
	}
}

func decodeAny[T any](f func([]byte) (T, error)) func([]byte) (any, error) {
	return func(b []byte) (any, error) {
		m, err := f(b)
		return m, err
	}
}
