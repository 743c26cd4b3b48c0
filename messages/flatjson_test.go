package messages

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestFlatFieldTables checks that every field table lists its struct's
// fields in order, with the JSON names of their tags and matching kinds.
func TestFlatFieldTables(t *testing.T) {
	for _, tc := range []struct {
		v      any
		fields []flatField
	}{
		{ProxyPollRequest{}, proxyPollRequestFields[:]},
		{ProxyPollResponse{}, proxyPollResponseFields[:]},
		{ProxyAnswerRequest{}, proxyAnswerRequestFields[:]},
		{ProxyAnswerResponse{}, proxyAnswerResponseFields[:]},
		{ClientPollRequest{}, clientPollRequestFields[:]},
		{ClientPollResponse{}, clientPollResponseFields[:]},
		{sessionDescriptionWire{}, sessionDescriptionFields[:]},
		{sessionDescriptionWire{}, sessionDescriptionCheckFields[:]},
	} {
		typ := reflect.TypeOf(tc.v)
		t.Run(typ.Name(), func(t *testing.T) {
			if typ.NumField() != len(tc.fields) {
				t.Fatalf("%d fields, table has %d", typ.NumField(), len(tc.fields))
			}
			for i, f := range tc.fields {
				sf := typ.Field(i)
				name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
				if name != f.name {
					t.Errorf("field %d: tag name %q, table %q", i, name, f.name)
				}
				var want flatKind
				switch {
				case sf.Type.Kind() == reflect.String:
					want = flatString
				case sf.Type.Kind() == reflect.Pointer && sf.Type.Elem().Kind() == reflect.String:
					want = flatStringPtr
				case sf.Type.Kind() == reflect.Int || sf.Type.Kind() == reflect.Int64:
					want = flatInt
				default:
					t.Fatalf("field %d: type %v not supported by the fast path", i, sf.Type)
				}
				if f.kind != want && !(f.kind == flatStringPtrCheck && want == flatStringPtr) {
					t.Errorf("field %d (%s): kind %d, want %d", i, f.name, f.kind, want)
				}
			}
		})
	}
}

// sessionDescriptionWire is the session description's keys as a struct,
// for TestFlatFieldTables.
type sessionDescriptionWire struct {
	Type *string `json:"type"`
	SDP  *string `json:"sdp"`
}

// jsonReference decodes b as the decoders did before the fast path: plain
// json.Unmarshal into a zero T, errors wrapped the same way.
func jsonReference[T any](b []byte) (T, error) {
	var r T
	err := unmarshal(b, &r)
	return r, err
}

// checkSameParse fails t unless the error texts are identical and, without
// an error, the values too (callers discard the value with an error).
func checkSameParse[T any](t *testing.T, what string, b []byte, got T, gotErr error, want T, wantErr error) {
	t.Helper()
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%s %q: error %v, encoding/json says %v", what, b, gotErr, wantErr)
	}
	if gotErr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%s %q:\n got %#v\nwant %#v", what, b, got, want)
	}
}

// checkFlatDifferential compares every parse function with encoding/json on
// b, and the fast path of scanFlatObject with encoding/json's validity.
func checkFlatDifferential(t *testing.T, b []byte) {
	t.Helper()
	if !utf8.Valid(b) {
		return // precondition: the decoders reject invalid UTF-8 first
	}
	{
		got, gotErr := parseProxyPollRequest(b)
		want, wantErr := jsonReference[ProxyPollRequest](b)
		checkSameParse(t, "ProxyPollRequest", b, got, gotErr, want, wantErr)
	}
	{
		got, gotErr := parseProxyPollResponse(b)
		want, wantErr := jsonReference[ProxyPollResponse](b)
		checkSameParse(t, "ProxyPollResponse", b, got, gotErr, want, wantErr)
	}
	{
		got, gotErr := parseProxyAnswerRequest(b)
		want, wantErr := jsonReference[ProxyAnswerRequest](b)
		checkSameParse(t, "ProxyAnswerRequest", b, got, gotErr, want, wantErr)
	}
	{
		got, gotErr := parseProxyAnswerResponse(b)
		want, wantErr := jsonReference[ProxyAnswerResponse](b)
		checkSameParse(t, "ProxyAnswerResponse", b, got, gotErr, want, wantErr)
	}
	{
		got, gotErr := parseClientPollRequest(b)
		want, wantErr := jsonReference[ClientPollRequest](b)
		checkSameParse(t, "ClientPollRequest", b, got, gotErr, want, wantErr)
	}
	{
		got, gotErr := parseClientPollResponse(b)
		want, wantErr := jsonReference[ClientPollResponse](b)
		checkSameParse(t, "ClientPollResponse", b, got, gotErr, want, wantErr)
	}
	{
		type parsed struct{ typ, sdp string }
		var got, want parsed
		var gotErr, wantErr error
		got.typ, got.sdp, gotErr = parseSessionDescription(string(b), true)
		want.typ, want.sdp, wantErr = unmarshalSessionDescription(string(b))
		checkSameParse(t, "session description", b, got, gotErr, want, wantErr)
		// The public decoder against the one without the fast path.
		d, err := DecodeSessionDescription(string(b))
		rd, rerr := referenceDecodeSessionDescription(string(b))
		checkSameParse(t, "DecodeSessionDescription", b, d, err, rd, rerr)
		// The check-only variant: same error, same type.
		c, cerr := decodeSessionDescription(string(b), false)
		if fmt.Sprint(cerr) != fmt.Sprint(rerr) || cerr == nil && c.Type != rd.Type {
			t.Fatalf("check-only %q: %+v, %v; want type %q, %v", b, c, cerr, rd.Type, rerr)
		}
		if (checkSessionDescription(string(b)) == nil) != (rerr == nil) {
			t.Fatalf("checkSessionDescription(%q) disagrees with %v", b, rerr)
		}
	}
	// Whatever the fields, the fast path accepts only valid JSON.
	var v [6]flatValue
	if scanFlatObject(b, proxyPollRequestFields[:], v[:]) && !json.Valid(b) {
		t.Fatalf("fast path accepts invalid JSON %q", b)
	}
}

// referenceDecodeSessionDescription is DecodeSessionDescription as it was
// before the fast path.
func referenceDecodeSessionDescription(s string) (SessionDescription, error) {
	if len(s) > MaxSessionDescriptionLength {
		return SessionDescription{}, fmt.Errorf("%w: longer than %d bytes", ErrInvalidSessionDescription, MaxSessionDescriptionLength)
	}
	if !utf8.ValidString(s) {
		return SessionDescription{}, fmt.Errorf("%w: invalid UTF-8", ErrInvalidSessionDescription)
	}
	if hasControl(s) {
		return SessionDescription{}, fmt.Errorf("%w: control character", ErrInvalidSessionDescription)
	}
	typ, sdp, err := unmarshalSessionDescription(s)
	if err != nil {
		return SessionDescription{}, fmt.Errorf("%w: %w", ErrInvalidSessionDescription, err)
	}
	if !validSDPType(typ) {
		return SessionDescription{}, fmt.Errorf("%w: %w", ErrInvalidSessionDescription, errSDPUnknownType)
	}
	return SessionDescription{Type: typ, SDP: sdp}, nil
}

// flatCases are inputs at the edges of the fast path: each must give the
// same result as encoding/json, whichever path takes it.
var flatCases = []string{
	``, ` `, `{}`, ` { } `, "\t{\r\n}\n", `{`, `}`, `{}x`, `{} {}`, `[]`, `null`, `"x"`, `1`, `{,}`,
	`{"Sid":"a"}`, `{"Sid":"a",}`, `{"Sid" : "a" , "Version" : "1.3"}`, `{"Sid":"a" "Version":"1"}`,
	`{"sid":"a","SID":"b"}`, `{"Sid":"a","Sid":null}`, `{"Sid":null}`, `{"Sid":1}`, `{"Sid":true}`,
	`{"Sid":{}}`, `{"Sid":[]}`, `{"S\u0069d":"a"}`, `{"ſid":"a"}`, `{"Sıd":"a"}`, `{"S_id":"a"}`,
	`{"Clients":5}`, `{"Clients":-0}`, `{"Clients":-5}`, `{"Clients":05}`, `{"Clients":1.5}`,
	`{"Clients":1e3}`, `{"Clients":999999999}`, `{"Clients":1000000000}`, `{"Clients":99999999999999999999}`,
	`{"Clients":"5"}`, `{"Clients":null}`, `{"Clients":5,"Clients":null}`, `{"Clients":-}`, `{"Clients":+1}`,
	`{"AcceptedRelayPattern":null}`, `{"AcceptedRelayPattern":""}`, `{"AcceptedRelayPattern":"a$","acceptedrelaypattern":null}`,
	`{"x":1.5e-3,"y":-0.0,"z":true,"w":false,"v":null,"u":"s"}`, `{"x":01}`, `{"x":1.}`, `{"x":.5}`, `{"x":1e}`,
	`{"x":-}`, `{"x":tru}`, `{"x":nul}`, `{"x":{"a":1}}`, `{"x":[1,2]}`, `{"x":"\q"}`, `{"x":"a` + "\x01" + `"}`,
	`{"Sid":"\"\\\/\b\f\n\r\t"}`, `{"Sid":"\u0041\u00e9\u2028\uffff"}`, `{"Sid":"\ud83d\ude00"}`, `{"Sid":"\ud800"}`,
	`{"Sid":"\u12"}`, `{"Sid":"\u12G4"}`, `{"Sid":"é€😀"}`, `{"Sid":"a\"}`, `{"Sid":"a`, `{"Sid"`, `{"Sid":`,
	`{"NextPoll":20000,"Status":"no match"}`, `{"NextPoll":-20000}`, `{"NextPoll":"1"}`,
	`{"type":"offer","sdp":"v=0\r\n"}`, `{"type":"offer"}`, `{"sdp":""}`, `{"type":null,"sdp":""}`,
	`{"type":"offer","type":null,"sdp":""}`, `{"TYPE":"answer","Sdp":"x"}`, `{"type":"Offer","sdp":""}`,
	`{"type":"offer","sdp":"","sdp":"x"}`, `{"type":1,"sdp":""}`, `{"type":"offer","sdp":"","extra":{}}`,
	`{"type":"offer","sdp":"\u003cb\u003e"}`, `{"Type":"offer","SDP":""}`, `{"ſdp":"","type":"offer"}`,
	`{"\u0074ype":"offer","sdp":""}`, `{"type":"offer","sdp":"","x":1.5}`,
}

func TestFlatObjectDifferential(t *testing.T) {
	for _, s := range flatCases {
		checkFlatDifferential(t, []byte(s))
	}
	for _, name := range []string{
		"proxy-poll-request-1.3.json", "proxy-poll-request-legacy-empty-pattern.json",
		"proxy-poll-response-match.json", "proxy-poll-response-nomatch.json",
		"proxy-poll-response-incorrect-relay-pattern.json", "proxy-answer-request.json",
		"proxy-answer-response-success.json", "client-poll-response-answer.json", "sdp-offer.json", "sdp-answer.json",
	} {
		checkFlatDifferential(t, readGolden(t, name))
	}
}

// TestFlatObjectFastPath checks that the messages real peers send take the
// fast path (the benchmarks would only show it as a slowdown).
func TestFlatObjectFastPath(t *testing.T) {
	var v [6]flatValue
	for _, tc := range []struct {
		name   string
		fields []flatField
	}{
		{"proxy-poll-request-1.3.json", proxyPollRequestFields[:]},
		{"proxy-poll-response-match.json", proxyPollResponseFields[:]},
		{"proxy-poll-response-nomatch.json", proxyPollResponseFields[:]},
		{"proxy-answer-request.json", proxyAnswerRequestFields[:]},
		{"proxy-answer-response-success.json", proxyAnswerResponseFields[:]},
		{"client-poll-response-answer.json", clientPollResponseFields[:]},
		{"sdp-offer.json", sessionDescriptionFields[:]},
		{"sdp-answer.json", sessionDescriptionFields[:]},
	} {
		if !scanFlatObject(readGolden(t, tc.name), tc.fields, v[:]) {
			t.Errorf("%s does not take the fast path", tc.name)
		}
	}
	_, body, _ := strings.Cut(string(readGolden(t, "client-poll-request-1.0.txt")), "\n")
	r, err := parseClientPollRequest([]byte(body))
	if err != nil || !scanFlatObject(body, clientPollRequestFields[:], v[:]) {
		t.Fatalf("client poll request does not take the fast path: %v", err)
	}
	if !scanFlatObject(r.Offer, sessionDescriptionFields[:], v[:]) {
		t.Error("the client's offer does not take the fast path")
	}
}

// FuzzFlatObjectDifferential checks every parse function (fast path, then
// encoding/json) against plain encoding/json, and DecodeSessionDescription
// against its implementation without the fast path.
func FuzzFlatObjectDifferential(f *testing.F) {
	for _, s := range flatCases {
		f.Add([]byte(s))
	}
	addGolden(f, "proxy-poll-request-1.3.json", "proxy-poll-response-match.json", "proxy-answer-request.json",
		"client-poll-response-answer.json", "sdp-offer.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		checkFlatDifferential(t, b)
	})
}
