package messages

import "testing"

func benchDecode[T any](b *testing.B, name string, decode func([]byte) (T, error)) {
	body := readGolden(b, name)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decode(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeProxyPollRequest(b *testing.B) {
	benchDecode(b, "proxy-poll-request-1.3.json", DecodeProxyPollRequest)
}

func BenchmarkDecodeProxyPollResponseMatch(b *testing.B) {
	benchDecode(b, "proxy-poll-response-match.json", DecodeProxyPollResponse)
}

func BenchmarkDecodeProxyPollResponseNoMatch(b *testing.B) {
	benchDecode(b, "proxy-poll-response-nomatch.json", DecodeProxyPollResponse)
}

func BenchmarkDecodeProxyAnswerRequest(b *testing.B) {
	benchDecode(b, "proxy-answer-request.json", DecodeProxyAnswerRequest)
}

func BenchmarkDecodeProxyAnswerResponse(b *testing.B) {
	benchDecode(b, "proxy-answer-response-success.json", DecodeProxyAnswerResponse)
}

func BenchmarkDecodeClientPollRequest(b *testing.B) {
	benchDecode(b, "client-poll-request-1.0.txt", DecodeClientPollRequest)
}

func BenchmarkDecodeClientPollResponse(b *testing.B) {
	benchDecode(b, "client-poll-response-answer.json", DecodeClientPollResponse)
}

func BenchmarkDecodeSessionDescription(b *testing.B) {
	s := string(readGolden(b, "sdp-offer.json"))
	b.ReportAllocs()
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		if _, err := DecodeSessionDescription(s); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeProxyPollResponseMatch(b *testing.B) {
	m, err := DecodeProxyPollResponse(readGolden(b, "proxy-poll-response-match.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkEncodeClientPollResponse(b *testing.B) {
	m, err := DecodeClientPollResponse(readGolden(b, "client-poll-response-answer.json"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendEncodeProxyPollResponseMatch(b *testing.B) {
	m, err := DecodeProxyPollResponse(readGolden(b, "proxy-poll-response-match.json"))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = m.AppendEncode(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAppendEncodeClientPollResponse(b *testing.B) {
	m, err := DecodeClientPollResponse(readGolden(b, "client-poll-response-answer.json"))
	if err != nil {
		b.Fatal(err)
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		if buf, err = m.AppendEncode(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
