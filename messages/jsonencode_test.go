package messages

import (
	"bytes"
	"encoding/json"
	"testing"
)

// checkMarshalDifferential fails t unless the hand-written encoders write
// exactly what json.Marshal writes, whatever the field values (valid or not).
func checkMarshalDifferential(t *testing.T, s1, s2, s3, s4 string, n int64) {
	t.Helper()
	pr := ProxyPollResponse{Status: s1, Offer: s2, NAT: s3, NextPoll: n, RelayURL: s4}
	want, err := json.Marshal(pr)
	if err != nil {
		t.Fatal(err)
	}
	if got := pr.appendMarshal(nil); !bytes.Equal(got, want) {
		t.Fatalf("ProxyPollResponse %#v:\n got %s\nwant %s", pr, got, want)
	}
	for _, cr := range []ClientPollResponse{{Answer: s1, Error: s2}, {Answer: s3}, {Error: s4}, {}} {
		want, err := json.Marshal(cr)
		if err != nil {
			t.Fatal(err)
		}
		if got := cr.appendMarshal(nil); !bytes.Equal(got, want) {
			t.Fatalf("ClientPollResponse %#v:\n got %s\nwant %s", cr, got, want)
		}
	}
}

var marshalCases = []string{
	"", "a", "client match", "\"\\/<>&'`", "\x00\x01\x07\b\t\n\v\f\r\x1b\x1f\x7f", "é€😀", "\u2027\u2028\u2029\u202a",
	"\x80", "\xff\xfe", "a\xc3", "\xe2\x80", "\xed\xa0\x80", "\U0010ffff",
}

func TestMarshalDifferential(t *testing.T) {
	offer, answer := goldenOffer(t), goldenAnswer(t)
	for _, s := range marshalCases {
		checkMarshalDifferential(t, s, offer, s, s, 20000)
		checkMarshalDifferential(t, StatusClientMatch, s, NATUnrestricted, "wss://a.example/"+s, -1)
	}
	checkMarshalDifferential(t, StatusClientMatch, offer, answer, "", 1<<62)
}

func FuzzMarshalDifferential(f *testing.F) {
	offer := goldenOffer(f)
	for _, s := range marshalCases {
		f.Add(s, offer, s, s, int64(20000))
	}
	f.Fuzz(func(t *testing.T, s1, s2, s3, s4 string, n int64) {
		checkMarshalDifferential(t, s1, s2, s3, s4, n)
	})
}

// TestAppendEncodeAllocs: with room in the buffer, encoding a client
// answer allocates nothing and a match response only the relay URL's
// parse (its check), and the bytes are Encode's; an invalid message leaves
// the buffer as it was.
func TestAppendEncodeAllocs(t *testing.T) {
	pr, err := DecodeProxyPollResponse(readGolden(t, "proxy-poll-response-match.json"))
	if err != nil {
		t.Fatal(err)
	}
	cr, err := DecodeClientPollResponse(readGolden(t, "client-poll-response-answer.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		encode func() ([]byte, error)
		append func([]byte) ([]byte, error)
		allocs float64
	}{
		{"proxy poll response", pr.Encode, pr.AppendEncode, 1},
		{"client poll response", cr.Encode, cr.AppendEncode, 0},
	} {
		want, err := c.encode()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 3, 8<<10)
		got, err := c.append(buf)
		if err != nil || !bytes.Equal(got[:3], buf[:3]) || !bytes.Equal(got[3:], want) {
			t.Errorf("%s: AppendEncode = %q, %v; want the prefix, then %q", c.name, got, err, want)
		}
		if n := testing.AllocsPerRun(100, func() { _, _ = c.append(buf[:0]) }); n > c.allocs {
			t.Errorf("%s: AppendEncode allocates %.0f times, want at most %.0f", c.name, n, c.allocs)
		}
	}
	bad := ProxyPollResponse{Status: "no such status"}
	if got, err := bad.AppendEncode([]byte("x")); err == nil || string(got) != "x" {
		t.Errorf("invalid response: AppendEncode = %q, %v; want \"x\" and an error", got, err)
	}
}
