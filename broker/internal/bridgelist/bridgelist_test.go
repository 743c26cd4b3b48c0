package bridgelist

import (
	"encoding/hex"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestParseFile(t *testing.T) {
	f, err := os.Open("testdata/bridges.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	l, err := Parse(f)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 3 {
		t.Fatalf("Len = %d, want 3", l.Len())
	}
	tests := []struct {
		fp, url, host string
		index         int
	}{
		{"2B280B23E1107BB62ABFC40DDCC8824814F80A72", "wss://snowflake.torproject.net/", "snowflake.torproject.net", 0},
		{"8838024498816a039fcbbab14e6f40a0843051fa", "wss://02.snowflake.torproject.net", "02.snowflake.torproject.net", 1},
		{"00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF", "ws://127.0.0.1:8000/", "127.0.0.1", 2},
	}
	for _, tt := range tests {
		fp, _ := hex.DecodeString(tt.fp)
		i, ok := l.Lookup(fp)
		if !ok || i != tt.index {
			t.Errorf("Lookup(%s) = %d, %v", tt.fp, i, ok)
			continue
		}
		if b := l.At(i); b.WebSocketAddress != tt.url || b.Host != tt.host {
			t.Errorf("bridge %d = %+v", i, b)
		}
	}
	if _, ok := l.Lookup(make([]byte, 20)); ok {
		t.Error("Lookup of an unknown fingerprint succeeded")
	}
}

func TestParseErrors(t *testing.T) {
	const good = `{"displayName":"d","webSocketAddress":"wss://a.example/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`
	tests := map[string]string{
		"empty":          "",
		"unknown field":  `{"displayName":"d","webSocketAddress":"wss://a.example/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72","x":1}`,
		"bad json":       `{"displayName":`,
		"two objects":    good + good,
		"short fp":       `{"webSocketAddress":"wss://a.example/","fingerprint":"2B28"}`,
		"non-hex fp":     `{"webSocketAddress":"wss://a.example/","fingerprint":"ZZ280B23E1107BB62ABFC40DDCC8824814F80A72"}`,
		"missing fp":     `{"webSocketAddress":"wss://a.example/"}`,
		"https scheme":   `{"webSocketAddress":"https://a.example/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`,
		"no host":        `{"webSocketAddress":"wss:///path","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`,
		"duplicate":      good + "\n" + good,
		"good then bad":  good + "\n{",
		"line too long":  `{"displayName":"` + strings.Repeat("a", maxLine) + `"}`,
		"missing url":    `{"fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`,
		"not an object":  `[]`,
		"null":           `null`,
		"number fp":      `{"webSocketAddress":"wss://a.example/","fingerprint":1}`,
		"url with space": `{"webSocketAddress":"wss://a b/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`,
	}
	for name, in := range tests {
		t.Run(name, func(t *testing.T) {
			if l, err := Parse(strings.NewReader(in)); err == nil {
				t.Fatalf("Parse succeeded with %d bridges", l.Len())
			}
		})
	}
}

func TestTooMany(t *testing.T) {
	var sb strings.Builder
	for i := range MaxBridges + 1 {
		fp := make([]byte, 20)
		fp[0], fp[1] = byte(i), 1
		sb.WriteString(`{"webSocketAddress":"wss://a.example/","fingerprint":"` + hex.EncodeToString(fp) + "\"}\n")
	}
	if _, err := Parse(strings.NewReader(sb.String())); !errors.Is(err, ErrTooMany) {
		t.Fatalf("Parse = %v, want ErrTooMany", err)
	}
}

func TestFromEntries(t *testing.T) {
	l, err := FromEntries(Entry{DisplayName: "default", Fingerprint: "2B280B23E1107BB62ABFC40DDCC8824814F80A72", WebSocketAddress: "ws://127.0.0.1:8000/"})
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != 1 || l.At(0).Host != "127.0.0.1" {
		t.Fatalf("list = %+v", l.At(0))
	}
	good := Entry{Fingerprint: "2B280B23E1107BB62ABFC40DDCC8824814F80A72", WebSocketAddress: "wss://a.example/"}
	for name, entries := range map[string][]Entry{
		"none":            nil,
		"bad fingerprint": {{Fingerprint: "nothex", WebSocketAddress: "ws://127.0.0.1/"}},
		"https scheme":    {{Fingerprint: good.Fingerprint, WebSocketAddress: "https://a.example/"}},
		"duplicate":       {good, good},
	} {
		if _, err := FromEntries(entries...); !errors.Is(err, errInvalid) {
			t.Errorf("%s: FromEntries = %v, want errInvalid", name, err)
		}
	}
}
