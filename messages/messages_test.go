package messages

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// sdpJSON returns a serialized session description of the given type for
// building test messages.
func sdpJSON(typ string) string {
	return `{"type":"` + typ + `","sdp":"v=0\r\na=candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host\r\n"}`
}

// quoteJSON returns s as a JSON string literal (as Go encodes it).
func quoteJSON(tb testing.TB, s string) string {
	tb.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// checkErr fails tb unless err matches want (nil want = no error).
func checkErr(tb testing.TB, err, want error) {
	tb.Helper()
	if want == nil {
		if err != nil {
			tb.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		tb.Fatalf("error = %v, want %v", err, want)
	}
}

func TestDecodeProxyPollRequest(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want ProxyPollRequest
		err  error
	}{
		{"1.0 defaults", `{"Sid":"ymbcCMto7KHNGYlp","Version":"1.0"}`,
			ProxyPollRequest{Sid: "ymbcCMto7KHNGYlp", Version: "1.0", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"1.1 type", `{"Sid":"ymbcCMto7KHNGYlp","Version":"1.1","Type":"standalone"}`,
			ProxyPollRequest{Sid: "ymbcCMto7KHNGYlp", Version: "1.1", Type: ProxyTypeStandalone, NAT: NATUnknown}, nil},
		{"1.2 nat clients", `{"Sid":"ymbcCMto7KHNGYlp","Version":"1.2","Type":"badge","NAT":"restricted","Clients":24}`,
			ProxyPollRequest{Sid: "ymbcCMto7KHNGYlp", Version: "1.2", Type: ProxyTypeBadge, NAT: NATRestricted, Clients: 24}, nil},
		{"1.2 no pattern", `{"Sid":"a","Version":"1.2","Type":"iptproxy","NAT":"unrestricted","Clients":8}`,
			ProxyPollRequest{Sid: "a", Version: "1.2", Type: ProxyTypeIPTProxy, NAT: NATUnrestricted, Clients: 8}, nil},
		{"1.3 pattern", `{"Sid":"a","Version":"1.3","Type":"bloco","NAT":"unknown","Clients":0,"AcceptedRelayPattern":"snowflake.torproject.net$"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeBloco, NAT: NATUnknown, AcceptedRelayPattern: strPtr("snowflake.torproject.net$")}, nil},
		{"pattern null is absent", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":null}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"empty pattern present", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":""}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown, AcceptedRelayPattern: strPtr("")}, nil},
		{"exact pattern", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":"^snowflake.torproject.net$"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown, AcceptedRelayPattern: strPtr("^snowflake.torproject.net$")}, nil},
		{"clients negative", `{"Sid":"a","Version":"1.2","Clients":-1}`,
			ProxyPollRequest{Sid: "a", Version: "1.2", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"clients huge", `{"Sid":"a","Version":"1.2","Clients":1099511627776}`,
			ProxyPollRequest{Sid: "a", Version: "1.2", Type: ProxyTypeUnknown, NAT: NATUnknown, Clients: MaxClients}, nil},
		{"version 1", `{"Sid":"a","Version":"1"}`, ProxyPollRequest{Sid: "a", Version: "1", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"version 1.9", `{"Sid":"a","Version":"1.9"}`, ProxyPollRequest{Sid: "a", Version: "1.9", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"version 1.10", `{"Sid":"a","Version":"1.10"}`, ProxyPollRequest{Sid: "a", Version: "1.10", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"version 1.x", `{"Sid":"a","Version":"1.x"}`, ProxyPollRequest{Sid: "a", Version: "1.x", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"lowercase keys", `{"sid":"a","version":"1.3","type":"webext","nat":"restricted","clients":16,"acceptedrelaypattern":"x$"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeWebExt, NAT: NATRestricted, Clients: 16, AcceptedRelayPattern: strPtr("x$")}, nil},
		{"unknown keys ignored", `{"Sid":"a","Version":"1.3","Future":{"x":[1,2]},"Other":"<b>"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"unknown type", `{"Sid":"a","Version":"1.3","Type":"mobile"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"markup type", `{"Sid":"a","Version":"1.3","Type":"<script>alert(1)</script>"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"type case-sensitive", `{"Sid":"a","Version":"1.3","Type":"Standalone"}`,
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"stub sid", `{"Sid":"stub-sid","Version":"1.3"}`,
			ProxyPollRequest{Sid: "stub-sid", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},
		{"leading whitespace", " \t\n{\"Sid\":\"a\",\"Version\":\"1.3\"}\n",
			ProxyPollRequest{Sid: "a", Version: "1.3", Type: ProxyTypeUnknown, NAT: NATUnknown}, nil},

		{"empty input", ``, ProxyPollRequest{}, ErrMalformed},
		{"not json", `Sid=a`, ProxyPollRequest{}, ErrMalformed},
		{"array", `[]`, ProxyPollRequest{}, ErrMalformed},
		{"trailing garbage", `{"Sid":"a","Version":"1.3"}x`, ProxyPollRequest{}, ErrMalformed},
		{"clients string", `{"Sid":"a","Version":"1.3","Clients":"8"}`, ProxyPollRequest{}, ErrMalformed},
		{"clients float", `{"Sid":"a","Version":"1.3","Clients":8.5}`, ProxyPollRequest{}, ErrMalformed},
		{"empty object", `{}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"null", `null`, ProxyPollRequest{}, ErrUnknownVersion},
		{"missing version", `{"Sid":"a"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version 2.0", `{"Sid":"a","Version":"2.0"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version 10", `{"Sid":"a","Version":"10.0"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version 0.9", `{"Sid":"a","Version":"0.9"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version markup", `{"Sid":"a","Version":"1.<b>"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version too long", `{"Sid":"a","Version":"1.000000000000000"}`, ProxyPollRequest{}, ErrUnknownVersion},
		{"version number", `{"Sid":"a","Version":1.3}`, ProxyPollRequest{}, ErrMalformed},
		{"missing sid", `{"Version":"1.3"}`, ProxyPollRequest{}, ErrMissingSid},
		{"sid space", `{"Sid":"a b","Version":"1.3"}`, ProxyPollRequest{}, ErrInvalidSid},
		{"sid markup", `{"Sid":"<a>","Version":"1.3"}`, ProxyPollRequest{}, ErrInvalidSid},
		{"sid control", `{"Sid":"a\u0000","Version":"1.3"}`, ProxyPollRequest{}, ErrInvalidSid},
		{"sid too long", `{"Sid":"` + strings.Repeat("a", MaxSidLength+1) + `","Version":"1.3"}`, ProxyPollRequest{}, ErrInvalidSid},
		{"bad nat", `{"Sid":"a","Version":"1.3","NAT":"symmetric"}`, ProxyPollRequest{}, ErrInvalidNAT},
		{"nat case-sensitive", `{"Sid":"a","Version":"1.3","NAT":"Restricted"}`, ProxyPollRequest{}, ErrInvalidNAT},
		{"pattern space", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":"a b$"}`, ProxyPollRequest{}, ErrInvalidRelayPattern},
		{"pattern markup", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":"<x>$"}`, ProxyPollRequest{}, ErrInvalidRelayPattern},
		{"pattern control", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":"x\n$"}`, ProxyPollRequest{}, ErrInvalidRelayPattern},
		{"pattern too long", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":"` + strings.Repeat("a", MaxRelayPatternLength) + `$"}`, ProxyPollRequest{}, ErrInvalidRelayPattern},
		{"pattern number", `{"Sid":"a","Version":"1.3","AcceptedRelayPattern":5}`, ProxyPollRequest{}, ErrMalformed},
		{"invalid utf-8", "{\"Sid\":\"a\",\"Version\":\"1.3\",\"Type\":\"\xff\"}", ProxyPollRequest{}, ErrMalformed},
		{"too large", `{"Sid":"a","Version":"1.3","X":"` + strings.Repeat("a", MaxBodySize) + `"}`, ProxyPollRequest{}, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeProxyPollRequest([]byte(tt.in))
			checkErr(t, err, tt.err)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestDecodeProxyPollRequestEmptyIsSyntaxError mirrors Snowflake's test: an
// empty body gives a *json.SyntaxError.
func TestDecodeProxyPollRequestEmptyIsSyntaxError(t *testing.T) {
	_, err := DecodeProxyPollRequest(nil)
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v (%T) is not a *json.SyntaxError", err, err)
	}
	if err.Error() != "unexpected end of JSON input" {
		t.Errorf("text = %q", err.Error())
	}
}

func TestEncodeProxyPollRequest(t *testing.T) {
	tests := []struct {
		name string
		in   ProxyPollRequest
		want string
		err  error
	}{
		{"full", ProxyPollRequest{Sid: "a", Type: "standalone", NAT: "unknown", Clients: 16, AcceptedRelayPattern: strPtr("x$")},
			`{"Sid":"a","Version":"1.3","Type":"standalone","NAT":"unknown","Clients":16,"AcceptedRelayPattern":"x$"}`, nil},
		{"version forced", ProxyPollRequest{Sid: "a", Version: "9.9", Type: "webext", NAT: "restricted"},
			`{"Sid":"a","Version":"1.3","Type":"webext","NAT":"restricted","Clients":0,"AcceptedRelayPattern":null}`, nil},
		{"empty fields kept", ProxyPollRequest{Sid: "a"},
			`{"Sid":"a","Version":"1.3","Type":"","NAT":"","Clients":0,"AcceptedRelayPattern":null}`, nil},
		{"own type", ProxyPollRequest{Sid: "a", Type: "my-proxy_2.0"},
			`{"Sid":"a","Version":"1.3","Type":"my-proxy_2.0","NAT":"","Clients":0,"AcceptedRelayPattern":null}`, nil},
		{"clients clamped", ProxyPollRequest{Sid: "a", Clients: -5},
			`{"Sid":"a","Version":"1.3","Type":"","NAT":"","Clients":0,"AcceptedRelayPattern":null}`, nil},
		{"no sid", ProxyPollRequest{}, "", ErrMissingSid},
		{"bad sid", ProxyPollRequest{Sid: "a\"b"}, "", ErrInvalidSid},
		{"bad nat", ProxyPollRequest{Sid: "a", NAT: "x"}, "", ErrInvalidNAT},
		{"bad type", ProxyPollRequest{Sid: "a", Type: "a b"}, "", ErrInvalidProxyType},
		{"long type", ProxyPollRequest{Sid: "a", Type: strings.Repeat("t", MaxProxyTypeLength+1)}, "", ErrInvalidProxyType},
		{"bad pattern", ProxyPollRequest{Sid: "a", AcceptedRelayPattern: strPtr("<")}, "", ErrInvalidRelayPattern},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Encode()
			checkErr(t, err, tt.err)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestProxyPollRequestRoundTrip(t *testing.T) {
	for _, in := range []ProxyPollRequest{
		{Sid: "ymbcCMto7KHNGYlp", Type: ProxyTypeStandalone, NAT: NATUnrestricted, Clients: 8, AcceptedRelayPattern: strPtr("snowflake.torproject.net$")},
		{Sid: "stub-sid", Type: ProxyTypeWebExt, NAT: NATRestricted, Clients: 0},
		{Sid: "a+/=_-.", Type: ProxyTypeBadge, NAT: NATUnknown, Clients: MaxClients, AcceptedRelayPattern: strPtr("")},
	} {
		b, err := in.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeProxyPollRequest(b)
		if err != nil {
			t.Fatal(err)
		}
		in.Version = ProxyVersion
		if !reflect.DeepEqual(got, in) {
			t.Errorf("got %+v, want %+v", got, in)
		}
	}
}

func TestDecodeProxyPollResponse(t *testing.T) {
	offer := sdpJSON("offer")
	q := quoteJSON(t, offer)
	tests := []struct {
		name    string
		in      string
		want    ProxyPollResponse
		err     error
		errText string
	}{
		{"match", `{"Status":"client match","Offer":` + q + `,"NAT":"unknown"}`,
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnknown}, nil, ""},
		{"match relay url", `{"Status":"client match","Offer":` + q + `,"NAT":"restricted","RelayURL":"wss://snowflake.torproject.net/"}`,
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATRestricted, RelayURL: "wss://snowflake.torproject.net/"}, nil, ""},
		{"match nextpoll", `{"Status":"client match","Offer":` + q + `,"NAT":"unrestricted","NextPoll":600}`,
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnrestricted, NextPoll: 600}, nil, ""},
		{"match ws port path", `{"Status":"client match","Offer":` + q + `,"RelayURL":"ws://127.0.0.1:8080/path?x=1"}`,
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnknown, RelayURL: "ws://127.0.0.1:8080/path?x=1"}, nil, ""},
		{"no match", `{"Status":"no match"}`, ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown}, nil, ""},
		{"no match offer cleared", `{"Status":"no match","Offer":"garbage","NAT":"restricted","NextPoll":20000}`,
			ProxyPollResponse{Status: StatusNoMatch, NAT: NATRestricted, NextPoll: 20000}, nil, ""},
		// A newer broker may know more NAT types: the proxy treats them as unknown.
		{"new nat type", `{"Status":"no match","NAT":"open"}`, ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown}, nil, ""},
		{"nat case", `{"Status":"client match","Offer":` + q + `,"NAT":"Restricted"}`,
			ProxyPollResponse{Status: StatusClientMatch, Offer: offer, NAT: NATUnknown}, nil, ""},
		{"nat markup", `{"Status":"no match","NAT":"<b>"}`, ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown}, nil, ""},
		{"lowercase keys", `{"status":"no match","nextpoll":5}`, ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown, NextPoll: 5}, nil, ""},
		{"nextpoll negative", `{"Status":"no match","NextPoll":-1}`, ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown}, nil, ""},
		{"nextpoll huge", `{"Status":"no match","NextPoll":9223372036854775807}`,
			ProxyPollResponse{Status: StatusNoMatch, NAT: NATUnknown, NextPoll: MaxNextPoll}, nil, ""},
		{"incorrect relay pattern", `{"Status":"incorrect relay pattern","Offer":"x","NAT":"","NextPoll":3600000,"RelayURL":""}`,
			ProxyPollResponse{Status: StatusIncorrectRelayPattern, NAT: NATUnknown, NextPoll: 3600000}, ErrIncorrectRelayPattern, "incorrect relay pattern"},
		{"unknown status", `{"Status":"try later","Offer":"x","NextPoll":7}`,
			ProxyPollResponse{Status: "try later", NAT: NATUnknown, NextPoll: 7}, ErrUnknownStatus, `unknown status: "try later"`},
		{"unknown status markup", `{"Status":"<b>x</b>"}`, ProxyPollResponse{}, ErrUnknownStatus, "unknown status: status not printable"},
		{"unknown status too long", `{"Status":"` + strings.Repeat("s", MaxStatusLength+1) + `"}`, ProxyPollResponse{}, ErrUnknownStatus, ""},

		{"match no offer", `{"Status":"client match","NAT":"unknown"}`, ProxyPollResponse{}, ErrMissingOffer, "no supplied offer"},
		{"match bad offer", `{"Status":"client match","Offer":"{\"type\":1,\"sdp\":\"\"}"}`, ProxyPollResponse{}, ErrInvalidSessionDescription, ""},
		{"no status", `{"Test":"test"}`, ProxyPollResponse{}, ErrEmptyResponse, ""},
		{"empty", ``, ProxyPollResponse{}, ErrMalformed, ""},
		{"relay http", `{"Status":"no match","RelayURL":"https://example.com/"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay userinfo", `{"Status":"no match","RelayURL":"wss://u:p@example.com/"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay no host", `{"Status":"no match","RelayURL":"wss:///x"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay opaque", `{"Status":"no match","RelayURL":"wss:example.com"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay relative", `{"Status":"no match","RelayURL":"/relay"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay space", `{"Status":"no match","RelayURL":"wss://a b/"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay markup", `{"Status":"no match","RelayURL":"wss://a/<script>"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay ampersand", `{"Status":"no match","RelayURL":"wss://a/?x=1&y=2"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay idn", `{"Status":"no match","RelayURL":"wss://bücher.example/"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"relay too long", `{"Status":"no match","RelayURL":"wss://a/` + strings.Repeat("p", MaxRelayURLLength) + `"}`, ProxyPollResponse{}, ErrInvalidRelayURL, ""},
		{"nextpoll float", `{"Status":"no match","NextPoll":1.5}`, ProxyPollResponse{}, ErrMalformed, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeProxyPollResponse([]byte(tt.in))
			checkErr(t, err, tt.err)
			if tt.errText != "" && err.Error() != tt.errText {
				t.Errorf("error text %q, want %q", err.Error(), tt.errText)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEncodeProxyPollResponse(t *testing.T) {
	offer := sdpJSON("offer")
	tests := []struct {
		name string
		in   ProxyPollResponse
		want string
		err  error
	}{
		{"no match keeps nat", ProxyPollResponse{Status: StatusNoMatch, NAT: NATRestricted, NextPoll: 1},
			`{"Status":"no match","Offer":"","NAT":"restricted","NextPoll":1,"RelayURL":""}`, nil},
		{"no match drops offer", ProxyPollResponse{Status: StatusNoMatch, Offer: offer},
			`{"Status":"no match","Offer":"","NAT":"","NextPoll":0,"RelayURL":""}`, nil},
		{"html escaping", ProxyPollResponse{Status: StatusClientMatch, Offer: `{"type":"offer","sdp":"<&>"}`},
			`{"Status":"client match","Offer":"{\"type\":\"offer\",\"sdp\":\"\u003c\u0026\u003e\"}","NAT":"","NextPoll":0,"RelayURL":""}`, nil},
		{"unknown status", ProxyPollResponse{Status: "maybe"}, "", ErrUnknownStatus},
		{"match without offer", ProxyPollResponse{Status: StatusClientMatch}, "", ErrMissingOffer},
		{"match bad offer", ProxyPollResponse{Status: StatusClientMatch, Offer: "x"}, "", ErrInvalidSessionDescription},
		{"bad nat", ProxyPollResponse{Status: StatusNoMatch, NAT: "x"}, "", ErrInvalidNAT},
		{"bad relay", ProxyPollResponse{Status: StatusNoMatch, RelayURL: "http://x/"}, "", ErrInvalidRelayURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Encode()
			checkErr(t, err, tt.err)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestProxyPollResponseRoundTrip(t *testing.T) {
	offer := sdpJSON("offer")
	for _, in := range []ProxyPollResponse{
		{Status: StatusClientMatch, Offer: offer, NAT: NATRestricted, NextPoll: 20000},
		{Status: StatusClientMatch, Offer: offer, NAT: NATUnknown, RelayURL: "wss://snowflake.torproject.net/"},
		{Status: StatusNoMatch, NAT: NATUnrestricted, NextPoll: 3},
	} {
		b, err := in.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeProxyPollResponse(b)
		if err != nil {
			t.Fatal(err)
		}
		if got != in {
			t.Errorf("got %+v, want %+v", got, in)
		}
	}
}

func TestDecodeProxyAnswerRequest(t *testing.T) {
	answer := sdpJSON("answer")
	q := quoteJSON(t, answer)
	tests := []struct {
		name string
		in   string
		want ProxyAnswerRequest
		err  error
	}{
		{"1.0", `{"Version":"1.0","Sid":"uFNcRZvbcG_wKZRw","Answer":` + q + `}`,
			ProxyAnswerRequest{Version: "1.0", Sid: "uFNcRZvbcG_wKZRw", Answer: answer}, nil},
		{"1.3 stub sid", `{"Version":"1.3","Sid":"stub-sid","Answer":` + q + `}`,
			ProxyAnswerRequest{Version: "1.3", Sid: "stub-sid", Answer: answer}, nil},
		{"lowercase keys", `{"version":"1.3","sid":"a","answer":` + q + `}`,
			ProxyAnswerRequest{Version: "1.3", Sid: "a", Answer: answer}, nil},
		{"pranswer allowed", `{"Version":"1.3","Sid":"a","Answer":` + quoteJSON(t, sdpJSON("pranswer")) + `}`,
			ProxyAnswerRequest{Version: "1.3", Sid: "a", Answer: sdpJSON("pranswer")}, nil},
		{"sdp blob without version", answer, ProxyAnswerRequest{}, ErrUnknownVersion},
		{"version 2", `{"Version":"2.0","Sid":"a","Answer":` + q + `}`, ProxyAnswerRequest{}, ErrUnknownVersion},
		{"missing sid", `{"Version":"1.0","Answer":` + q + `}`, ProxyAnswerRequest{}, ErrMissingSid},
		{"bad sid", `{"Version":"1.0","Sid":"a&b","Answer":` + q + `}`, ProxyAnswerRequest{}, ErrInvalidSid},
		{"missing answer", `{"Version":"1.0","Sid":"a"}`, ProxyAnswerRequest{}, ErrMissingAnswer},
		{"answer not sdp", `{"Version":"1.0","Sid":"a","Answer":"a=candidate"}`, ProxyAnswerRequest{}, ErrInvalidSessionDescription},
		{"answer type number", `{"Version":"1.0","Sid":"a","Answer":"{\"type\":2,\"sdp\":\"\"}"}`, ProxyAnswerRequest{}, ErrInvalidSessionDescription},
		{"answer object", `{"Version":"1.0","Sid":"a","Answer":{"type":"answer","sdp":""}}`, ProxyAnswerRequest{}, ErrMalformed},
		{"empty", ``, ProxyAnswerRequest{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeProxyAnswerRequest([]byte(tt.in))
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEncodeProxyAnswerRequest(t *testing.T) {
	answer := sdpJSON("answer")
	in := ProxyAnswerRequest{Version: "1.0", Sid: "stub-sid", Answer: answer}
	b, err := in.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"Version":"1.3","Sid":"stub-sid","Answer":` + quoteJSON(t, answer) + `}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	got, err := DecodeProxyAnswerRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	in.Version = ProxyVersion
	if got != in {
		t.Errorf("round trip %+v, want %+v", got, in)
	}
	for _, bad := range []struct {
		r   ProxyAnswerRequest
		err error
	}{
		{ProxyAnswerRequest{Answer: answer}, ErrMissingSid},
		{ProxyAnswerRequest{Sid: "a"}, ErrMissingAnswer},
		{ProxyAnswerRequest{Sid: "a", Answer: "{}"}, ErrInvalidSessionDescription},
	} {
		_, err := bad.r.Encode()
		checkErr(t, err, bad.err)
	}
}

func TestProxyAnswerResponse(t *testing.T) {
	tests := []struct {
		in   string
		want ProxyAnswerResponse
		err  error
	}{
		{`{"Status":"success"}`, ProxyAnswerResponse{Status: StatusSuccess}, nil},
		{`{"Status":"client gone"}`, ProxyAnswerResponse{Status: StatusClientGone}, nil},
		{`{"status":"success"}`, ProxyAnswerResponse{Status: StatusSuccess}, nil},
		{`{"Test":"test"}`, ProxyAnswerResponse{}, ErrEmptyResponse},
		{`{"Status":"timeout"}`, ProxyAnswerResponse{}, ErrUnknownStatus},
		{`{"Status":5}`, ProxyAnswerResponse{}, ErrMalformed},
		{``, ProxyAnswerResponse{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := DecodeProxyAnswerResponse([]byte(tt.in))
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if tt.err != nil {
				return
			}
			b, err := got.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if back, err := DecodeProxyAnswerResponse(b); err != nil || back != got {
				t.Errorf("round trip %+v, %v", back, err)
			}
		})
	}
	if _, err := (ProxyAnswerResponse{Status: "x"}).Encode(); !errors.Is(err, ErrUnknownStatus) {
		t.Errorf("Encode unknown status: %v", err)
	}
}

func TestDecodeClientPollRequest(t *testing.T) {
	offer := sdpJSON("offer")
	q := quoteJSON(t, offer)
	tests := []struct {
		name    string
		in      string
		want    ClientPollRequest
		err     error
		errText string // exact text sent to Snowflake clients
	}{
		{"with nat", "1.0\n{\n\t\"offer\": " + q + ",\n\t\"nat\": \"unknown\"\n}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"without nat", "1.0\n{\n\t\"offer\": " + q + "\n}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"empty nat", "1.0\n{\"offer\":" + q + ",\"nat\":\"\"}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"restricted", "1.0\n{\"offer\":" + q + ",\"nat\":\"restricted\"}",
			ClientPollRequest{Offer: offer, NAT: NATRestricted, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"fingerprint lowercase", "1.0\n{\"offer\":" + q + ",\"fingerprint\":\"8838024498816a039fcbbab14e6f40a0843051fa\"}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: "8838024498816a039fcbbab14e6f40a0843051fa"}, nil, ""},
		{"fingerprint 32 bytes", "1.0\n{\"offer\":" + q + ",\"fingerprint\":\"" + strings.Repeat("AB", 32) + "\"}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: strings.Repeat("AB", 32)}, nil, ""},
		{"uppercase keys", "1.0\n{\"Offer\":" + q + ",\"NAT\":\"unrestricted\",\"Fingerprint\":\"\"}",
			ClientPollRequest{Offer: offer, NAT: NATUnrestricted, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"unknown keys", "1.0\n{\"offer\":" + q + ",\"relayURL\":\"wss://x/\"}",
			ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil, ""},
		{"rollback offer accepted", "1.0\n{\"offer\":" + quoteJSON(t, `{"type":"rollback","sdp":""}`) + "}",
			ClientPollRequest{Offer: `{"type":"rollback","sdp":""}`, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil, ""},

		{"json version 2.0", `{"version":"2.0"}`, ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"version 2.0", "2.0\n{\"offer\":" + q + "}", ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"version 1.1", "1.1\n{\"offer\":" + q + "}", ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"version crlf", "1.0\r\n{\"offer\":" + q + "}", ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"no newline", "1.0", ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"empty", "", ClientPollRequest{}, ErrUnknownVersion, "unsupported message version"},
		{"bad json", "1.0\n{", ClientPollRequest{}, ErrMalformed, "unexpected end of JSON input"},
		{"offer object", "1.0\n{\"offer\":{}}", ClientPollRequest{}, ErrMalformed,
			"json: cannot unmarshal object into Go struct field ClientPollRequest.offer of type string"},
		{"no offer", "1.0\n{\"nat\":\"unknown\"}", ClientPollRequest{}, ErrMissingOffer, "no supplied offer"},
		// Whole texts, as a Snowflake broker words them for its clients.
		{"offer numeric type", "1.0\n{\"offer\":\"{\\\"type\\\":0,\\\"sdp\\\":\\\"v=0\\\"}\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: invalid SDP type"},
		{"offer null sdp", "1.0\n{\"offer\":\"{\\\"type\\\":\\\"offer\\\",\\\"sdp\\\":null}\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: invalid SDP"},
		{"offer unknown type", "1.0\n{\"offer\":\"{\\\"type\\\":\\\"Offer\\\",\\\"sdp\\\":\\\"\\\"}\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: Unknown SDP type"},
		{"offer key case", "1.0\n{\"offer\":\"{\\\"Type\\\":\\\"offer\\\",\\\"sdp\\\":\\\"\\\"}\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: cannot deserialize SessionDescription without type field"},
		{"offer not an object", "1.0\n{\"offer\":\"[]\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: json: cannot unmarshal array into Go value of type map[string]interface {}"},
		{"offer missing sdp", "1.0\n{\"offer\":\"{\\\"type\\\":\\\"offer\\\"}\"}", ClientPollRequest{}, ErrInvalidSessionDescription,
			"malformed session description: cannot deserialize SessionDescription without sdp field"},
		{"bad fingerprint", "1.0\n{\"offer\":" + q + ",\"fingerprint\":\"123123\"}", ClientPollRequest{}, ErrInvalidFingerprint, "cannot decode fingerprint"},
		{"fingerprint not hex", "1.0\n{\"offer\":" + q + ",\"fingerprint\":\"" + strings.Repeat("G", 40) + "\"}", ClientPollRequest{}, ErrInvalidFingerprint, "cannot decode fingerprint"},
		{"bad nat", "1.0\n{\"offer\":" + q + ",\"nat\":\"cone\"}", ClientPollRequest{}, ErrInvalidNAT, "invalid NAT type"},
		{"fingerprint before nat", "1.0\n{\"offer\":" + q + ",\"nat\":\"cone\",\"fingerprint\":\"1\"}", ClientPollRequest{}, ErrInvalidFingerprint, "cannot decode fingerprint"},
		{"invalid utf-8", "1.0\n{\"offer\":\"\xc3\"}", ClientPollRequest{}, ErrMalformed, ""},
		{"too large", "1.0\n" + strings.Repeat(" ", MaxBodySize), ClientPollRequest{}, ErrTooLarge, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeClientPollRequest([]byte(tt.in))
			checkErr(t, err, tt.err)
			if tt.errText != "" && err.Error() != tt.errText {
				t.Errorf("error text %q, want %q", err.Error(), tt.errText)
			}
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestLegacyClientPoll(t *testing.T) {
	offer := sdpJSON("offer")
	tests := []struct {
		name   string
		body   string
		header string
		want   ClientPollRequest
		err    error
	}{
		{"no header", offer, "", ClientPollRequest{Offer: offer, NAT: NATUnknown, Fingerprint: DefaultBridgeFingerprint}, nil},
		{"header", offer, "unrestricted", ClientPollRequest{Offer: offer, NAT: NATUnrestricted, Fingerprint: DefaultBridgeFingerprint}, nil},
		{"bad header", offer, "full cone", ClientPollRequest{}, ErrInvalidNAT},
		{"not sdp", `{"offer":"x"}`, "", ClientPollRequest{}, ErrInvalidSessionDescription},
		{"empty", "", "", ClientPollRequest{}, ErrMissingOffer},
		{"trailing newline", offer + "\n", "", ClientPollRequest{}, ErrInvalidSessionDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeLegacyClientPoll([]byte(tt.body), tt.header)
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
	for in, want := range map[string]bool{"{": true, `{"type":"offer"}`: true, "": false, " {": false, "1.0\n{": false} {
		if got := IsLegacyClientPoll([]byte(in)); got != want {
			t.Errorf("IsLegacyClientPoll(%q) = %v", in, got)
		}
	}
}

func TestEncodeClientPollRequest(t *testing.T) {
	offer := sdpJSON("offer")
	q := quoteJSON(t, offer)
	tests := []struct {
		name string
		in   ClientPollRequest
		want string
		err  error
	}{
		{"default fingerprint filled in", ClientPollRequest{Offer: offer, NAT: NATUnknown},
			"1.0\n{\"offer\":" + q + ",\"nat\":\"unknown\",\"fingerprint\":\"" + DefaultBridgeFingerprint + "\"}", nil},
		{"explicit default kept", ClientPollRequest{Offer: offer, NAT: NATRestricted, Fingerprint: DefaultBridgeFingerprint},
			"1.0\n{\"offer\":" + q + ",\"nat\":\"restricted\",\"fingerprint\":\"" + DefaultBridgeFingerprint + "\"}", nil},
		{"empty nat kept", ClientPollRequest{Offer: offer},
			"1.0\n{\"offer\":" + q + ",\"nat\":\"\",\"fingerprint\":\"" + DefaultBridgeFingerprint + "\"}", nil},
		{"bad fingerprint", ClientPollRequest{Offer: offer, Fingerprint: "123123"}, "", ErrInvalidFingerprint},
		{"no offer", ClientPollRequest{}, "", ErrMissingOffer},
		{"bad nat", ClientPollRequest{Offer: offer, NAT: "x"}, "", ErrInvalidNAT},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.in.Encode()
			checkErr(t, err, tt.err)
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if err != nil {
				return
			}
			back, err := DecodeClientPollRequest(got)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.in
			if want.Fingerprint == "" {
				want.Fingerprint = DefaultBridgeFingerprint
			}
			want.NAT, _ = NormalizeNAT(want.NAT)
			if back != want {
				t.Errorf("round trip %+v, want %+v", back, want)
			}
		})
	}
	// Snowflake's test: a request with fingerprint "123123" does not decode.
	body := []byte("1.0\n{\"offer\":" + q + ",\"nat\":\"unknown\",\"fingerprint\":\"123123\"}")
	if _, err := DecodeClientPollRequest(body); !errors.Is(err, ErrInvalidFingerprint) {
		t.Errorf("decode 123123: %v", err)
	}
}

func TestClientPollResponse(t *testing.T) {
	answer := sdpJSON("answer")
	q := quoteJSON(t, answer)
	tests := []struct {
		name string
		in   string
		want ClientPollResponse
		err  error
	}{
		{"answer", `{"answer":` + q + `}`, ClientPollResponse{Answer: answer}, nil},
		{"error", `{"error":"no snowflake proxies currently available"}`, ClientPollResponse{Error: StrNoProxies}, nil},
		{"both", `{"answer":` + q + `,"error":"x"}`, ClientPollResponse{Answer: answer, Error: "x"}, nil},
		{"error with quotes", `{"error":"invalid character 'x' looking for beginning of value"}`,
			ClientPollResponse{Error: "invalid character 'x' looking for beginning of value"}, nil},
		{"uppercase keys", `{"Answer":` + q + `}`, ClientPollResponse{Answer: answer}, nil},
		{"empty object", `{}`, ClientPollResponse{}, ErrEmptyResponse},
		{"empty strings", `{"answer":"","error":""}`, ClientPollResponse{}, ErrEmptyResponse},
		{"bad answer", `{"answer":"v=0"}`, ClientPollResponse{}, ErrInvalidSessionDescription},
		{"error control", `{"error":"a\nb"}`, ClientPollResponse{}, ErrMalformed},
		{"error too long", `{"error":"` + strings.Repeat("e", MaxErrorLength+1) + `"}`, ClientPollResponse{}, ErrTooLarge},
		{"not json", `no`, ClientPollResponse{}, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeClientPollResponse([]byte(tt.in))
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if err != nil {
				return
			}
			b, err := got.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if back, err := DecodeClientPollResponse(b); err != nil || back != got {
				t.Errorf("round trip %+v, %v", back, err)
			}
		})
	}
	for _, tt := range []struct {
		r    ClientPollResponse
		want string
		err  error
	}{
		{ClientPollResponse{Error: StrTimedOut}, `{"error":"timed out waiting for answer!"}`, nil},
		{ClientPollResponse{Error: "a<b"}, `{"error":"a\u003cb"}`, nil},
		{ClientPollResponse{}, "", ErrEmptyResponse},
		{ClientPollResponse{Error: "\xff"}, "", ErrMalformed},
		{ClientPollResponse{Answer: "x"}, "", ErrInvalidSessionDescription},
	} {
		got, err := tt.r.Encode()
		checkErr(t, err, tt.err)
		if string(got) != tt.want {
			t.Errorf("Encode(%+v) = %s, want %s", tt.r, got, tt.want)
		}
	}
}

func TestDecodeSessionDescription(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want SessionDescription
		err  error
	}{
		{"offer", `{"type":"offer","sdp":"v=0\r\n"}`, SessionDescription{Type: "offer", SDP: "v=0\r\n"}, nil},
		{"answer", `{"type":"answer","sdp":"x"}`, SessionDescription{Type: "answer", SDP: "x"}, nil},
		{"pranswer", `{"type":"pranswer","sdp":"x"}`, SessionDescription{Type: "pranswer", SDP: "x"}, nil},
		{"rollback empty sdp", `{"type":"rollback","sdp":""}`, SessionDescription{Type: "rollback"}, nil},
		{"key order", `{"sdp":"x","type":"offer"}`, SessionDescription{Type: "offer", SDP: "x"}, nil},
		{"escaped key", `{"\u0074ype":"offer","sdp":"x"}`, SessionDescription{Type: "offer", SDP: "x"}, nil},
		{"exact key wins", `{"Type":"answer","type":"offer","SDP":"y","sdp":"x"}`, SessionDescription{Type: "offer", SDP: "x"}, nil},
		{"unknown key", `{"type":"offer","sdp":"x","extra":[1]}`, SessionDescription{Type: "offer", SDP: "x"}, nil},
		{"spaces", ` { "type" : "offer" , "sdp" : "x" } `, SessionDescription{Type: "offer", SDP: "x"}, nil},
		{"markup in sdp", `{"type":"offer","sdp":"<script>"}`, SessionDescription{Type: "offer", SDP: "<script>"}, nil},

		// Snowflake decodes into a map: keys never fold.
		{"key case", `{"Type":"offer","SDP":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"sdp key case", `{"type":"offer","Sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"long s key", `{"type":"offer","ſdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"numeric type", `{"type":1,"sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"numeric sdp", `{"type":"offer","sdp":1}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"missing type", `{"sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"missing sdp", `{"type":"offer"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"null type", `{"type":null,"sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"null sdp", `{"type":"offer","sdp":null}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"unknown type", `{"type":"candidate","sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"type case-sensitive", `{"type":"Offer","sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"empty type", `{"type":"","sdp":"x"}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"array", `[]`, SessionDescription{}, ErrInvalidSessionDescription},
		{"null", `null`, SessionDescription{}, ErrInvalidSessionDescription},
		{"empty", ``, SessionDescription{}, ErrInvalidSessionDescription},
		{"raw sdp", "v=0", SessionDescription{}, ErrInvalidSessionDescription},
		{"trailing", `{"type":"offer","sdp":"x"}}`, SessionDescription{}, ErrInvalidSessionDescription},
		{"newline whitespace", "{\"type\":\"offer\",\n\"sdp\":\"x\"}", SessionDescription{}, ErrInvalidSessionDescription},
		{"escaped control in sdp ok", `{"type":"offer","sdp":"\u0000"}`, SessionDescription{Type: "offer", SDP: "\x00"}, nil},
		{"invalid utf-8", "{\"type\":\"offer\",\"sdp\":\"\xff\"}", SessionDescription{}, ErrInvalidSessionDescription},
		{"too long", `{"type":"offer","sdp":"` + strings.Repeat("a", MaxSessionDescriptionLength) + `"}`, SessionDescription{}, ErrInvalidSessionDescription},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSessionDescription(tt.in)
			checkErr(t, err, tt.err)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if err != nil {
				if !strings.HasPrefix(err.Error(), "malformed session description: ") {
					t.Errorf("error text %q", err.Error())
				}
				return
			}
			enc, err := got.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if back, err := DecodeSessionDescription(enc); err != nil || back != got {
				t.Errorf("round trip %+v, %v", back, err)
			}
		})
	}
	if got, err := (SessionDescription{Type: "answer", SDP: "a<b&c>\r\n"}).Encode(); err != nil || got != `{"type":"answer","sdp":"a\u003cb\u0026c\u003e\r\n"}` {
		t.Errorf("Encode = %s, %v", got, err)
	}
	for _, d := range []SessionDescription{{Type: "bogus"}, {Type: "offer", SDP: "\xff"}, {Type: "offer", SDP: strings.Repeat("a", MaxSessionDescriptionLength)}} {
		if _, err := d.Encode(); !errors.Is(err, ErrInvalidSessionDescription) {
			t.Errorf("Encode(%.20q) error %v", d.SDP, err)
		}
	}
}

func TestNormalizeNAT(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"", NATUnknown, nil},
		{"unknown", NATUnknown, nil},
		{"restricted", NATRestricted, nil},
		{"unrestricted", NATUnrestricted, nil},
		{"Unknown", "", ErrInvalidNAT},
		{"symmetric", "", ErrInvalidNAT},
		{" restricted", "", ErrInvalidNAT},
		{"<b>", "", ErrInvalidNAT},
	}
	for _, tt := range tests {
		got, err := NormalizeNAT(tt.in)
		checkErr(t, err, tt.err)
		if got != tt.want {
			t.Errorf("NormalizeNAT(%q) = %q", tt.in, got)
		}
		if err != nil && err.Error() != "invalid NAT type" {
			t.Errorf("text %q", err.Error())
		}
	}
}

func TestProxyTypes(t *testing.T) {
	want := []string{"standalone", "webext", "badge", "iptproxy", "bloco"}
	got := KnownProxyTypes()
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("KnownProxyTypes = %v", got)
	}
	got[0] = "changed"
	if KnownProxyTypes()[0] != "standalone" {
		t.Fatal("KnownProxyTypes returned shared slice")
	}
	for _, s := range want {
		if NormalizeProxyType(s) != s {
			t.Errorf("NormalizeProxyType(%q) changed it", s)
		}
	}
	for _, s := range []string{"", "unknown", "mobile", "Standalone", "standalone ", "<x>", "\x00", strings.Repeat("x", 1000)} {
		if got := NormalizeProxyType(s); got != ProxyTypeUnknown {
			t.Errorf("NormalizeProxyType(%q) = %q", s, got)
		}
	}
}

func TestValidateSid(t *testing.T) {
	tests := []struct {
		in  string
		err error
	}{
		{"q0Dq3Cq4t2o0kB4QeWm2Vw", nil},
		{"stub-sid", nil},
		{"uFNcRZvbcG_wKZRw", nil},
		{"a+b/c==", nil},
		{"v1.2", nil},
		{strings.Repeat("a", MaxSidLength), nil},
		{"", ErrMissingSid},
		{strings.Repeat("a", MaxSidLength+1), ErrInvalidSid},
		{"a b", ErrInvalidSid},
		{"a\tb", ErrInvalidSid},
		{"a\nb", ErrInvalidSid},
		{"a\x00", ErrInvalidSid},
		{"<script>", ErrInvalidSid},
		{"a&b", ErrInvalidSid},
		{`a"b`, ErrInvalidSid},
		{"a'b", ErrInvalidSid},
		{"a\\b", ErrInvalidSid},
		{"a%20", ErrInvalidSid},
		{"é", ErrInvalidSid},
		{"a\u2028", ErrInvalidSid},
	}
	for _, tt := range tests {
		checkErr(t, ValidateSid(tt.in), tt.err)
	}
}

func TestParseFingerprint(t *testing.T) {
	tests := []struct {
		in   string
		want int
		err  error
	}{
		{DefaultBridgeFingerprint, 20, nil},
		{strings.ToLower(DefaultBridgeFingerprint), 20, nil},
		{strings.Repeat("0f", 32), 32, nil},
		{"", 0, ErrInvalidFingerprint},
		{"123123", 0, ErrInvalidFingerprint},
		{DefaultBridgeFingerprint[:39], 0, ErrInvalidFingerprint},
		{DefaultBridgeFingerprint + "00", 0, ErrInvalidFingerprint},
		{strings.Repeat("zz", 20), 0, ErrInvalidFingerprint},
		{"$" + DefaultBridgeFingerprint[1:], 0, ErrInvalidFingerprint},
	}
	for _, tt := range tests {
		got, err := ParseFingerprint(tt.in)
		checkErr(t, err, tt.err)
		if len(got) != tt.want {
			t.Errorf("ParseFingerprint(%q) = %x", tt.in, got)
		}
		if err != nil && err.Error() != "cannot decode fingerprint" {
			t.Errorf("text %q", err.Error())
		}
	}
	b, _ := ParseFingerprint(DefaultBridgeFingerprint)
	if b[0] != 0x2B || b[19] != 0x72 {
		t.Errorf("bytes %x", b)
	}
}

// TestErrorTexts pins the texts that reach Snowflake clients.
func TestErrorTexts(t *testing.T) {
	for err, want := range map[error]string{
		ErrUnknownVersion:            "unsupported message version",
		ErrMissingOffer:              "no supplied offer",
		ErrInvalidFingerprint:        "cannot decode fingerprint",
		ErrInvalidNAT:                "invalid NAT type",
		ErrInvalidSessionDescription: "malformed session description",
		ErrIncorrectRelayPattern:     "incorrect relay pattern",
	} {
		if err.Error() != want {
			t.Errorf("%q, want %q", err.Error(), want)
		}
	}
}

// TestWorstCaseSizes checks that messages with every field at its bound and
// full of characters Go escapes six-fold still encode within MaxBodySize and
// decode back.
func TestWorstCaseSizes(t *testing.T) {
	prefix, suffix := `{"type":"offer","sdp":"`, `"}`
	sd := prefix + strings.Repeat("<", MaxSessionDescriptionLength-len(prefix)-len(suffix)) + suffix
	if len(sd) != MaxSessionDescriptionLength {
		t.Fatal(len(sd))
	}
	relay := "wss://" + strings.Repeat("a", MaxRelayURLLength-7) + "/"
	fp := strings.Repeat("a", 64)
	sid := strings.Repeat("s", MaxSidLength)
	cases := []struct {
		name   string
		msg    encoder
		decode func([]byte) (any, error)
	}{
		{"ProxyPollResponse", ProxyPollResponse{Status: StatusIncorrectRelayPattern, NAT: NATUnrestricted, NextPoll: MaxNextPoll, RelayURL: relay}, decodeAny(DecodeProxyPollResponse)},
		{"ProxyPollResponse match", ProxyPollResponse{Status: StatusClientMatch, Offer: sd, NAT: NATUnrestricted, NextPoll: MaxNextPoll, RelayURL: relay}, decodeAny(DecodeProxyPollResponse)},
		{"ProxyAnswerRequest", ProxyAnswerRequest{Sid: sid, Answer: sd}, decodeAny(DecodeProxyAnswerRequest)},
		{"ClientPollRequest", ClientPollRequest{Offer: sd, NAT: NATUnrestricted, Fingerprint: fp}, decodeAny(DecodeClientPollRequest)},
		{"ClientPollResponse", ClientPollResponse{Answer: sd, Error: strings.Repeat("<", MaxErrorLength)}, decodeAny(DecodeClientPollResponse)},
		{"ProxyPollRequest", ProxyPollRequest{Sid: sid, Type: strings.Repeat("t", MaxProxyTypeLength), NAT: NATUnrestricted, Clients: MaxClients, AcceptedRelayPattern: strPtr(strings.Repeat("p", MaxRelayPatternLength))}, decodeAny(DecodeProxyPollRequest)},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			b, err := tt.msg.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if len(b) > MaxBodySize {
				t.Fatalf("encoded %d bytes > MaxBodySize", len(b))
			}
			if _, err := tt.decode(b); err != nil && !errors.Is(err, ErrIncorrectRelayPattern) {
				t.Fatalf("decode: %v", err)
			}
		})
	}
}
