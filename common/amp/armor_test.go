package amp

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

func decodeArmor(src string) ([]byte, error) {
	dec, err := NewArmorDecoder(strings.NewReader(src))
	if err != nil {
		return nil, err
	}
	return io.ReadAll(dec)
}

// TestArmorDecoder runs Snowflake's TestArmorDecoder vectors, and more.
func TestArmorDecoder(t *testing.T) {
	tests := []struct {
		name    string
		input   string
		want    string
		wantErr error // nil: success
	}{
		{"version only", "\n<pre>\n0\n</pre>\n", "", nil},
		{"hello", "\n<pre>\n0aGVsbG8gd29ybGQK\n</pre>\n", "hello world\n", nil},
		{"bad version", "\n<pre>\n1aGVsbG8gd29ybGQK\n</pre>\n", "", ErrArmorVersion},
		{"text outside pre", "\n0aGVsbG8gd29ybGQK\nblah blah blah\n<pre>\n0aGVsbG8gd29ybGQK\n</pre>\n0aGVsbG8gd29ybGQK\nblah blah blah\n", "hello world\n", nil},
		{"several pre, padding split", "\n<pre>\n0QUJDREV\nGR0hJSkt\nMTU5PUFF\nSU1RVVld\n</pre>\njunk\n<pre>\nYWVowMTI\nzNDU2Nzg\n5Cg\n=\n</pre>\n<pre>\n=\n</pre>\n",
			"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\n", nil},
		{"no pre", "\naGVsbG8gd29ybGQK\nblah blah blah\naGVsbG8gd29ybGQK\naGVsbG8gd29ybGQK\nblah blah blah\n", "", ErrArmor},
		{"empty pre", "\naGVsbG8gd29ybGQK\nblah blah blah\n<pre>   </pre>\naGVsbG8gd29ybGQK\naGVsbG8gd29ybGQK<pre></pre>\nblah blah blah\n", "", ErrArmor},
		{"other elements inside pre", "blah <pre>0aGVsb<p>G8gd29</p>ybGQK</pre>", "hello world\n", nil},
		{"comment", "blah <!-- <pre>aGVsbG8gd29ybGQK</pre> -->", "", ErrArmor},
		{"ascii whitespace", "blah <pre>\x200\x09aG\x0aV\x0csb\x0dG8\x20gd29ybGQK</pre>", "hello world\n", nil},
		{"bad padding", "\n<pre>\n0QUJDREV\nGR0hJSkt\nMTU5PUFF\nSU1RVVld\n</pre>\njunk\n<pre>\nYWVowMTI\nzNDU2Nzg\n5Cg\n=\n</pre>\n", "", ErrArmor},
		// Snowflake disabled this one (golang/go#31626, since fixed).
		{"data after padding", "<pre>0QQ==</pre><pre>Qg==</pre>", "", ErrArmor},
		{"data after padding in one token", "<pre>0QQ==Qg==</pre>", "", ErrArmor},
		{"padding then whitespace then data", "<pre>0QQ== Qg==</pre>", "", ErrArmor},
		{"missing </pre>", "blah <pre></pre><pre>0aGVsbG8gd29ybGQK", "", ErrArmor},
		{"nested pre", "blah <pre>0aGVsb<pre>G8gd29</pre>ybGQK</pre>", "", ErrArmor},
		{"stray </pre>", "blah </pre><pre>0aGVsbG8gd29ybGQK</pre>", "", ErrArmor},
		{"stray </pre> after data", "<pre>0aGVsbG8gd29ybGQK</pre></pre>", "", ErrArmor},
		{"empty", "", "", ErrArmor},
		{"uppercase tags", "<PRE>0aGVsbG8gd29ybGQK</PRE>", "hello world\n", nil},
		{"entity", "<pre>&#48;aGVsbG8gd29ybGQK</pre>", "hello world\n", nil},
		{"non-base64", "<pre>0aGVsbG8*d29ybGQK</pre>", "", ErrArmor},
		{"truncated base64", "<pre>0aGVsbG8gd29ybGQ</pre>", "", ErrArmor},
		{"non-whitespace separator", "<pre>0aGVsbG8\vgd29ybGQK</pre>", "", ErrArmor},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeArmor(tt.input)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("%+q → (%+q, %v), want error %v", tt.input, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("%+q → (%+q, %v), want %+q", tt.input, got, err, tt.want)
			}
			// The same through a reader that returns one byte at a time.
			dec, err := NewArmorDecoder(iotest.OneByteReader(strings.NewReader(tt.input)))
			if err != nil {
				t.Fatal(err)
			}
			got, err = io.ReadAll(iotest.OneByteReader(dec))
			if err != nil || string(got) != tt.want {
				t.Fatalf("one byte at a time: (%+q, %v)", got, err)
			}
		})
	}
}

func TestArmorVersionErrorText(t *testing.T) {
	_, err := decodeArmor("<pre>1aGVsbG8gd29ybGQK</pre>")
	if err == nil || err.Error() != "unknown armor version indicator '1'" {
		t.Fatalf("error %v", err)
	}
}

// TestArmorDecoderReadError checks that an error of the underlying reader
// comes out as it is.
func TestArmorDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("<pre>0aGVsbG8g"), iotest.ErrReader(boom))
	dec, err := NewArmorDecoder(r)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(dec); !errors.Is(err, boom) {
		t.Fatalf("ReadAll error %v, want %v", err, boom)
	}
	if _, err := NewArmorDecoder(iotest.ErrReader(boom)); !errors.Is(err, boom) {
		t.Fatalf("NewArmorDecoder error %v, want %v", err, boom)
	}
}

// TestArmorDecoderTokenLimit checks that no text token longer than
// MaxElementText is buffered, inside or outside <pre>.
func TestArmorDecoderTokenLimit(t *testing.T) {
	long := strings.Repeat("A", MaxElementText+1)
	for _, input := range []string{
		"<pre>0" + long + "</pre>",
		long + "<pre>0aGVsbG8gd29ybGQK</pre>",
		"<pre>0aGVsbG8gd29ybGQK</pre>" + long,
	} {
		if _, err := decodeArmor(input); !errors.Is(err, ErrArmor) {
			t.Errorf("%d-byte input: error %v, want ErrArmor", len(input), err)
		}
	}
	// A full element of Snowflake's layout is within the limit.
	full := strings.Repeat("A", lineLen)
	var b strings.Builder
	b.WriteString("<pre>\n0")
	b.WriteString(full[1:])
	b.WriteString("\n")
	for range linesPerElement - 1 {
		b.WriteString(full + "\n")
	}
	b.WriteString("</pre><pre>A</pre>") // 4 more characters for whole base64 quanta
	got, err := decodeArmor(b.String())
	if err != nil || len(got) != linesPerElement*lineLen*3/4 {
		t.Fatalf("full element: %d bytes, %v", len(got), err)
	}
}

// layout is an independent construction of Snowflake's armor layout: the
// text '0' + base64, in lines of 32 characters each followed by "\n",
// grouped by 992 lines in "<pre>\n" … "</pre>\n".
func layout(data []byte) []byte {
	text := "0" + base64.StdEncoding.EncodeToString(data)
	var lines []string
	for len(text) > 32 {
		lines = append(lines, text[:32])
		text = text[32:]
	}
	lines = append(lines, text)
	var b bytes.Buffer
	b.WriteString(boilerplateStart)
	for len(lines) > 0 {
		n := min(992, len(lines))
		b.WriteString("<pre>\n")
		for _, l := range lines[:n] {
			b.WriteString(l + "\n")
		}
		b.WriteString("</pre>\n")
		lines = lines[n:]
	}
	b.WriteString(boilerplateEnd)
	return b.Bytes()
}

// TestArmorLayout checks the encoder's bytes: the boilerplate, the version,
// line and element breaks, for Snowflake's answer vector and for lengths at
// the line and element boundaries.
func TestArmorLayout(t *testing.T) {
	vec, err := os.ReadFile("testdata/client-poll-response-answer.json")
	if err != nil {
		t.Fatal(err)
	}
	// The smallest pages, spelled out.
	if got, want := string(Armor(nil)), boilerplateStart+"<pre>\n0\n</pre>\n</body>\n</html>"; got != want {
		t.Errorf("Armor(nil) =\n%s\nwant\n%s", got, want)
	}
	if got, want := string(Armor([]byte(`{"answer":"x"}`))), boilerplateStart+"<pre>\n0eyJhbnN3ZXIiOiJ4In0=\n</pre>\n</body>\n</html>"; got != want {
		t.Errorf("Armor(answer) =\n%s\nwant\n%s", got, want)
	}
	if !strings.HasPrefix(boilerplateStart, "<!doctype html>\n<html amp>\n<head>\n<meta charset=\"utf-8\">\n<script async src=\"https://cdn.ampproject.org/v0.js\"></script>\n") ||
		!strings.HasSuffix(boilerplateStart, "</noscript>\n</head>\n<body>\n") {
		t.Errorf("boilerplate:\n%s", boilerplateStart)
	}

	inputs := map[string][]byte{"vector": vec}
	// The text is 1 + 4*ceil(n/3) characters: around n = 23 and 47 it
	// crosses one and two full lines.
	for _, n := range []int{0, 1, 2, 3, 22, 23, 24, 25, 46, 47, 48} {
		inputs["n="+strconv.Itoa(n)] = randBytes(t, n)
	}
	perElement := linesPerElement * lineLen // text characters per element
	for _, text := range []int{perElement - 4, perElement, perElement + 4, 2 * perElement, 2*perElement + 1} {
		n := (text - 1) / 4 * 3
		for d := -2; d <= 2; d++ {
			inputs["elem n="+strconv.Itoa(n+d)] = randBytes(t, n+d)
		}
	}
	for name, data := range inputs {
		got := Armor(data)
		if want := layout(data); !bytes.Equal(got, want) {
			t.Errorf("%s: Armor differs from the layout (%d vs %d bytes)", name, len(got), len(want))
			continue
		}
		if len(got) != ArmoredLen(len(data)) {
			t.Errorf("%s: ArmoredLen = %d, page is %d bytes", name, ArmoredLen(len(data)), len(got))
		}
		// Streaming in odd pieces gives the same bytes.
		var buf bytes.Buffer
		enc, err := NewArmorEncoder(&buf)
		if err != nil {
			t.Fatal(err)
		}
		for p := data; len(p) > 0; {
			k := min(len(p), 1+len(p)%7)
			if _, err := enc.Write(p[:k]); err != nil {
				t.Fatal(err)
			}
			p = p[k:]
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		if err := enc.Close(); err != nil { // idempotent
			t.Fatal(err)
		}
		if !bytes.Equal(buf.Bytes(), got) {
			t.Errorf("%s: streamed encoding differs", name)
		}
	}
}

func randBytes(tb testing.TB, n int) []byte {
	tb.Helper()
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// TestArmorRoundTrip is Snowflake's: short inputs and lengths around the
// element size limit.
func TestArmorRoundTrip(t *testing.T) {
	var lengths []int
	for i := range lineLen * 2 {
		lengths = append(lengths, i)
	}
	for i := -10; i < 10; i++ {
		lengths = append(lengths, MaxElementText+i, 2*MaxElementText+i)
	}
	for _, n := range lengths {
		in := randBytes(t, n)
		out, err := decodeArmor(string(Armor(in)))
		if err != nil || !bytes.Equal(out, in) {
			t.Errorf("length %d: %d bytes back, error %v", n, len(out), err)
		}
	}
}

// failWriter fails after n bytes.
type failWriter struct{ n int }

var errWrite = errors.New("write failed")

func (w *failWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		w.n = 0
		return 0, errWrite
	}
	w.n -= len(p)
	return len(p), nil
}

func TestArmorEncoderWriteErrors(t *testing.T) {
	data := randBytes(t, 5000)
	size := ArmoredLen(len(data))
	for _, n := range []int{0, len(boilerplateStart), len(boilerplateStart) + 10, size / 2, size - len(boilerplateEnd) - 3, size - 1} {
		w := &failWriter{n: n}
		enc, err := NewArmorEncoder(w)
		if err == nil {
			_, err = enc.Write(data)
			if err == nil {
				err = enc.Close()
			}
		}
		if !errors.Is(err, errWrite) {
			t.Errorf("writer failing after %d bytes: error %v", n, err)
		}
	}
}

func BenchmarkArmor(b *testing.B) {
	vec, err := os.ReadFile("testdata/client-poll-response-answer.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(vec)))
	for b.Loop() {
		_ = Armor(vec)
	}
}

func BenchmarkArmorDecode(b *testing.B) {
	vec, err := os.ReadFile("testdata/client-poll-response-answer.json")
	if err != nil {
		b.Fatal(err)
	}
	page := Armor(vec)
	b.ReportAllocs()
	b.SetBytes(int64(len(page)))
	for b.Loop() {
		if _, err := decodeArmor(string(page)); err != nil {
			b.Fatal(err)
		}
	}
}
