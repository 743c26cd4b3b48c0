package messages

import (
	"errors"
	"reflect"
	"testing"
)

// addGolden adds the named golden files to f's seed corpus.
func addGolden(f *testing.F, names ...string) {
	f.Helper()
	for _, n := range names {
		f.Add(readGolden(f, n))
	}
}

// checkRoundTrip re-encodes an accepted message m and checks that decoding
// the result gives m again (after normalising what the encoder always sets).
func checkRoundTrip[T any](t *testing.T, m T, encode func(T) ([]byte, error), decode func([]byte) (T, error), accept func(error) bool) {
	t.Helper()
	b, err := encode(m)
	if err != nil {
		t.Fatalf("accepted message %+v does not encode: %v", m, err)
	}
	if len(b) > MaxBodySize {
		t.Fatalf("accepted message encodes to %d bytes", len(b))
	}
	back, err := decode(b)
	if !accept(err) {
		t.Fatalf("re-encoded message %q does not decode: %v", b, err)
	}
	if !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip changed the message\n got: %+v\nwant: %+v", back, m)
	}
}

func noError(err error) bool { return err == nil }

func FuzzDecodeProxyPollRequest(f *testing.F) {
	addGolden(f, "proxy-poll-request-1.3.json", "proxy-poll-request-legacy-empty-pattern.json")
	for _, s := range []string{
		``, `{}`, `null`, `{"Sid":"a","Version":"1.0"}`, `{"sid":"stub-sid","version":"1.2","clients":-3,"nat":""}`,
		`{"Sid":"a","Version":"1.3","AcceptedRelayPattern":null,"Type":"mobile"}`, `{"Sid":"a","Version":"2.0"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProxyPollRequest(b)
		if err != nil {
			return
		}
		checkSafe(t, m.Sid, m.Version, m.Type, m.NAT)
		m.Version = ProxyVersion
		checkRoundTrip(t, m, ProxyPollRequest.Encode, DecodeProxyPollRequest, noError)
	})
}

func FuzzDecodeProxyPollResponse(f *testing.F) {
	addGolden(f, "proxy-poll-response-match.json", "proxy-poll-response-nomatch.json", "proxy-poll-response-incorrect-relay-pattern.json")
	for _, s := range []string{
		``, `{}`, `{"Status":"client match"}`, `{"Status":"weird","NextPoll":-5}`, `{"status":"no match","relayurl":"ws://a:1/"}`,
	} {
		f.Add([]byte(s))
	}
	accept := func(err error) bool { return err == nil || errors.Is(err, ErrIncorrectRelayPattern) }
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProxyPollResponse(b)
		if errors.Is(err, ErrUnknownStatus) {
			checkSafe(t, m.Status)
			return
		}
		if !accept(err) {
			return
		}
		checkSafe(t, m.Status, m.NAT, m.RelayURL)
		checkRoundTrip(t, m, ProxyPollResponse.Encode, DecodeProxyPollResponse, accept)
	})
}

func FuzzDecodeProxyAnswerRequest(f *testing.F) {
	addGolden(f, "proxy-answer-request.json", "sdp-answer.json")
	for _, s := range []string{``, `{"Version":"1.0","Sid":"a","Answer":"{\"type\":\"answer\",\"sdp\":\"\"}"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProxyAnswerRequest(b)
		if err != nil {
			return
		}
		checkSafe(t, m.Version, m.Sid)
		m.Version = ProxyVersion
		checkRoundTrip(t, m, ProxyAnswerRequest.Encode, DecodeProxyAnswerRequest, noError)
	})
}

func FuzzDecodeProxyAnswerResponse(f *testing.F) {
	addGolden(f, "proxy-answer-response-success.json", "proxy-answer-response-client-gone.json")
	f.Add([]byte(`{"status":"success","x":1}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeProxyAnswerResponse(b)
		if err != nil {
			return
		}
		checkRoundTrip(t, m, ProxyAnswerResponse.Encode, DecodeProxyAnswerResponse, noError)
	})
}

// FuzzDecodeClientPollRequest fuzzes both the framed and the legacy format
// (the broker picks one with IsLegacyClientPoll).
func FuzzDecodeClientPollRequest(f *testing.F) {
	addGolden(f, "client-poll-request-1.0.txt", "client-poll-request-1.0-fingerprint.txt", "sdp-offer.json")
	for _, s := range []string{``, "1.0\n", "1.0\n{}", `{"version":"2.0"}`, "1.0\n{\"offer\":\"{\\\"type\\\":\\\"offer\\\",\\\"sdp\\\":\\\"\\\"}\",\"nat\":\"cone\"}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m ClientPollRequest
		var err error
		if IsLegacyClientPoll(b) {
			m, err = DecodeLegacyClientPoll(b, NATRestricted)
		} else {
			m, err = DecodeClientPollRequest(b)
		}
		if err != nil {
			return
		}
		checkSafe(t, m.NAT, m.Fingerprint)
		checkRoundTrip(t, m, ClientPollRequest.Encode, DecodeClientPollRequest, noError)
	})
}

func FuzzDecodeClientPollResponse(f *testing.F) {
	addGolden(f, "client-poll-response-answer.json", "client-poll-response-no-proxies.json", "client-poll-response-timeout.json")
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"error":"a<b"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeClientPollResponse(b)
		if err != nil {
			return
		}
		checkRoundTrip(t, m, ClientPollResponse.Encode, DecodeClientPollResponse, noError)
	})
}

func FuzzDecodeSessionDescription(f *testing.F) {
	f.Add(string(readGolden(f, "sdp-offer.json")))
	f.Add(string(readGolden(f, "sdp-answer.json")))
	for _, s := range []string{``, `{}`, `{"type":1,"sdp":""}`, `{"Type":"rollback","SDP":""}`, `{"type":"offer","sdp":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := DecodeSessionDescription(s)
		if err != nil {
			return
		}
		checkSafe(t, d.Type)
		enc, err := d.Encode()
		if err != nil {
			t.Fatalf("accepted %+v does not encode: %v", d, err)
		}
		back, err := DecodeSessionDescription(enc)
		if err != nil || back != d {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, d)
		}
	})
}

// checkSafe fails t if a field that is documented as safe for logs and pages
// holds anything but printable ASCII without markup.
func checkSafe(t *testing.T, fields ...string) {
	t.Helper()
	for _, s := range fields {
		if !isPlainText(s, true) {
			t.Fatalf("unsafe field %q", s)
		}
	}
}
