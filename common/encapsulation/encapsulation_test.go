package encapsulation

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"
	"testing/iotest"
)

// pseudorandom returns n deterministic non-trivial bytes.
func pseudorandom(n int) []byte {
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(rng.Uint32())
	}
	return p
}

func mustWriteData(tb testing.TB, w io.Writer, p []byte) {
	tb.Helper()
	if _, err := WriteData(w, p); err != nil {
		tb.Fatalf("WriteData(%d bytes): %v", len(p), err)
	}
}

func mustWritePadding(tb testing.TB, w io.Writer, n int) {
	tb.Helper()
	if _, err := WritePadding(w, n); err != nil {
		tb.Fatalf("WritePadding(%d): %v", n, err)
	}
}

// readerKinds wraps a byte slice in the reader shapes ReadData has separate
// paths for.
var readerKinds = []struct {
	name string
	wrap func([]byte) io.Reader
}{
	{"bytes.Reader", func(b []byte) io.Reader { return bytes.NewReader(b) }},
	{"bufio.Reader", func(b []byte) io.Reader { return bufio.NewReader(bytes.NewReader(b)) }},
	{"plain", func(b []byte) io.Reader { return struct{ io.Reader }{bytes.NewReader(b)} }},
	{"one-byte", func(b []byte) io.Reader { return iotest.OneByteReader(bytes.NewReader(b)) }},
	{"data-err", func(b []byte) io.Reader { return iotest.DataErrReader(bytes.NewReader(b)) }},
}

// writerKinds are the writer shapes WriteData has separate paths for.
var writerKinds = []struct {
	name string
	run  func(tb testing.TB, write func(io.Writer)) []byte
}{
	{"bytes.Buffer", func(tb testing.TB, write func(io.Writer)) []byte {
		var buf bytes.Buffer
		write(&buf)
		return buf.Bytes()
	}},
	{"bufio.Writer", func(tb testing.TB, write func(io.Writer)) []byte {
		var buf bytes.Buffer
		bw := bufio.NewWriterSize(&buf, 100)
		write(bw)
		if err := bw.Flush(); err != nil {
			tb.Fatal(err)
		}
		return buf.Bytes()
	}},
	{"plain", func(tb testing.TB, write func(io.Writer)) []byte {
		var buf bytes.Buffer
		write(struct{ io.Writer }{&buf})
		return buf.Bytes()
	}},
}

func TestRoundTrip(t *testing.T) {
	sizes := []int{
		0x00, 0x01,
		0x3e, 0x3f, 0x40, 0x41,
		0xfe, 0xff, 0x100, 0x101,
		0x1ffe, 0x1fff, 0x2000, 0x2001,
		0xfffe, 0xffff, 0x10000, 0x10001,
		0xffffe, 0xfffff,
	}
	for _, wk := range writerKinds {
		for _, rk := range readerKinds {
			t.Run(wk.name+"/"+rk.name, func(t *testing.T) {
				for _, size := range sizes {
					if size > 0x10001 && (rk.name == "one-byte" || rk.name == "data-err") {
						continue // slow under -race, and no different
					}
					original := pseudorandom(size)
					var n int
					enc := wk.run(t, func(w io.Writer) {
						var err error
						n, err = WriteData(w, original)
						if err != nil {
							t.Fatalf("size %#x: WriteData: %v", size, err)
						}
					})
					if n != len(enc) || n != size+prefixLength(size) {
						t.Fatalf("size %#x: WriteData returned %d, wrote %d, want %d", size, n, len(enc), size+prefixLength(size))
					}
					p := make([]byte, size+1)
					got, err := ReadData(rk.wrap(enc), p)
					if err != nil {
						t.Fatalf("size %#x: ReadData: %v", size, err)
					}
					if !bytes.Equal(p[:got], original) {
						t.Fatalf("size %#x: read back %d different bytes", size, got)
					}
				}
			})
		}
	}
}

func TestMinimalPrefix(t *testing.T) {
	tests := []struct {
		size   int
		prefix []byte
	}{
		{0, []byte{0x80}},
		{1, []byte{0x81}},
		{0x3f, []byte{0xbf}},
		{0x40, []byte{0xc0, 0x40}},
		{0x1fff, []byte{0xff, 0x7f}},
		{0x2000, []byte{0xc0, 0xc0, 0x00}},
		{0xfffff, []byte{0xff, 0xff, 0x7f}},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		mustWriteData(t, &buf, make([]byte, tt.size))
		if got := buf.Bytes()[:len(tt.prefix)]; !bytes.Equal(got, tt.prefix) {
			t.Errorf("size %#x: prefix %x, want %x", tt.size, got, tt.prefix)
		}
	}
}

func TestPaddingLength(t *testing.T) {
	sizes := []int{
		0x00, 0x01,
		0x3f, 0x40, 0x41, 0x42,
		0xff, 0x100, 0x101, 0x102,
		0x400, 0x401, 0x402, 0x403,
		0x2000, 0x2001, 0x2002, 0x2003,
		0x10000, 0x10001, 0x10002, 0x10003,
		0x100001, 0x100002, 0x100003, 0x100004,
	}
	for _, wk := range writerKinds {
		t.Run(wk.name, func(t *testing.T) {
			for _, size := range sizes {
				var n int
				enc := wk.run(t, func(w io.Writer) {
					var err error
					n, err = WritePadding(w, size)
					if err != nil {
						t.Fatalf("size %#x: WritePadding: %v", size, err)
					}
				})
				if n != size || len(enc) != size {
					t.Fatalf("size %#x: returned %d, wrote %d", size, n, len(enc))
				}
				// Only padding: a reader sees a clean EOF.
				got, err := ReadData(bytes.NewReader(enc), make([]byte, 10))
				if got != 0 || err != io.EOF {
					t.Fatalf("size %#x: ReadData = (%d, %v), want (0, EOF)", size, got, err)
				}
				// Every chunk is at most 1024 bytes.
				for rest := enc; len(rest) > 0; {
					length, k := decodePrefix(t, rest)
					if k+length > maxPaddingChunk {
						t.Fatalf("size %#x: padding chunk of %d bytes", size, k+length)
					}
					rest = rest[k+length:]
				}
			}
		})
	}
}

// decodePrefix decodes the prefix at the start of b (test helper).
func decodePrefix(tb testing.TB, b []byte) (length, k int) {
	tb.Helper()
	length = int(b[0] & firstValueMask)
	k = 1
	for more := b[0]&firstMoreBit != 0; more; k++ {
		more = b[k]&contMoreBit != 0
		length = length<<7 | int(b[k]&contValueMask)
	}
	return length, k
}

// TestPaddingPrefixes checks WritePadding's chunk boundaries and prefixes
// byte for byte (Snowflake's chunking, without its 0x3f mask bug).
func TestPaddingPrefixes(t *testing.T) {
	tests := []struct {
		n    int
		want []byte // prefixes and padding, padding bytes shown as zeros
	}{
		{1, []byte{0x00}},
		{2, []byte{0x01, 0}},
		{5, []byte{0x04, 0, 0, 0, 0}},
		{64, append([]byte{0x3f}, make([]byte, 63)...)},
		{65, append([]byte{0x40, 0x3f}, make([]byte, 63)...)},
		{200, append([]byte{0x41, 0x46}, make([]byte, 198)...)},
		{1024, append([]byte{0x47, 0x7e}, make([]byte, 1022)...)},
		{1025, append(append([]byte{0x47, 0x7e}, make([]byte, 1022)...), 0x00)},
		{1026, append(append([]byte{0x47, 0x7e}, make([]byte, 1022)...), 0x01, 0x00)},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		mustWritePadding(t, &buf, tt.n)
		if !bytes.Equal(buf.Bytes(), tt.want) {
			t.Errorf("WritePadding(%d) = %x, want %x", tt.n, buf.Bytes(), tt.want)
		}
	}
}

func TestSkipPadding(t *testing.T) {
	data := [][]byte{{}, {}, []byte("hello"), {}, []byte("world")}
	var enc bytes.Buffer
	mustWritePadding(t, &enc, 10)
	mustWritePadding(t, &enc, 100)
	mustWriteData(t, &enc, data[0])
	mustWriteData(t, &enc, data[1])
	mustWritePadding(t, &enc, 10)
	mustWriteData(t, &enc, data[2])
	mustWriteData(t, &enc, data[3])
	mustWritePadding(t, &enc, 10)
	mustWriteData(t, &enc, data[4])
	mustWritePadding(t, &enc, 10)
	mustWritePadding(t, &enc, 10)
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			r := rk.wrap(enc.Bytes())
			p := make([]byte, 100)
			for i, want := range data {
				n, err := ReadData(r, p)
				if err != nil {
					t.Fatalf("chunk %d: %v", i, err)
				}
				if !bytes.Equal(p[:n], want) {
					t.Fatalf("chunk %d: got %q, want %q", i, p[:n], want)
				}
			}
			if n, err := ReadData(r, p); n != 0 || err != io.EOF {
				t.Fatalf("after last chunk: (%d, %v), want (0, EOF)", n, err)
			}
		})
	}
}

func TestEOF(t *testing.T) {
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			for _, p := range [][]byte{nil, make([]byte, 10)} {
				if n, err := ReadData(rk.wrap(nil), p); n != 0 || err != io.EOF {
					t.Fatalf("len(p)=%d: (%d, %v), want (0, EOF)", len(p), n, err)
				}
			}
		})
	}
}

func TestUnexpectedEOF(t *testing.T) {
	tests := []struct {
		name string
		enc  []byte
	}{
		{"padding, second length byte", []byte{0x40}},
		{"data, second length byte", []byte{0xc0}},
		{"padding, third length byte", []byte{0x41, 0x80}},
		{"data, third length byte", []byte{0xc1, 0x80}},
		{"2 bytes of padding", []byte{0x02}},
		{"2 bytes of data", []byte{0x82}},
		{"1 of 2 bytes of padding", []byte{0x02, 'X'}},
		{"1 of 2 bytes of data", []byte{0x82, 'X'}},
		{"128 bytes of padding", []byte{0x41, 0x00}},
		{"128 bytes of data", []byte{0xc1, 0x00}},
		{"1 of 128 bytes of padding", []byte{0x41, 0x00, 'X'}},
		{"1 of 128 bytes of data", []byte{0xc1, 0x00, 'X'}},
		{"32768 bytes of padding", []byte{0x41, 0x80, 0x00}},
		{"32768 bytes of data", []byte{0xc1, 0x80, 0x00}},
		{"1 of 32768 bytes of padding", []byte{0x41, 0x80, 0x00, 'X'}},
		{"1 of 32768 bytes of data", []byte{0xc1, 0x80, 0x00, 'X'}},
		{"padding then data cut short", []byte{0x01, 0, 0x83, 'a'}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rk := range readerKinds {
				for _, size := range []int{0, 1, 2, 100000} {
					n, err := ReadData(rk.wrap(tt.enc), make([]byte, size))
					if n != 0 || err != io.ErrUnexpectedEOF {
						t.Fatalf("%s, len(p)=%d: (%d, %v), want (0, ErrUnexpectedEOF)", rk.name, size, n, err)
					}
				}
			}
		})
	}
}

func TestNonMinimalLengthEncoding(t *testing.T) {
	tests := []struct {
		name string
		enc  []byte
		want []byte
	}{
		{"1-byte", []byte{0x81, 'X'}, []byte("X")},
		{"2-byte", []byte{0xc0, 0x01, 'X'}, []byte("X")},
		{"3-byte", []byte{0xc0, 0x80, 0x01, 'X'}, []byte("X")},
		{"3-byte empty", []byte{0xc0, 0x80, 0x00}, []byte{}},
		{"2-byte padding then data", []byte{0x40, 0x01, 0, 0x81, 'Y'}, []byte("Y")},
		{"3-byte padding then data", []byte{0x40, 0x80, 0x00, 0x81, 'Z'}, []byte("Z")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rk := range readerKinds {
				p := make([]byte, 10)
				n, err := ReadData(rk.wrap(tt.enc), p)
				if err != nil || !bytes.Equal(p[:n], tt.want) {
					t.Fatalf("%s: (%q, %v), want (%q, nil)", rk.name, p[:n], err, tt.want)
				}
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	maxData := bytes.Repeat([]byte{'X'}, MaxLength)
	withData := func(prefix []byte, body []byte, then []byte) []byte {
		b := append(append([]byte{}, prefix...), body...)
		return append(b, then...)
	}
	hello := []byte{0x85, 'h', 'e', 'l', 'l', 'o'}
	tests := []struct {
		name    string
		enc     []byte
		want    []byte
		wantErr error
	}{
		{"max data", withData([]byte{0xff, 0xff, 0x7f}, maxData, nil), maxData, nil},
		{"4-byte data prefix", withData([]byte{0xe0, 0x80, 0x80, 0x80}, maxData, []byte{'X'}), nil, ErrTooLong},
		{"4-byte data prefix of 0", []byte{0xc0, 0x80, 0x80, 0x80}, nil, ErrTooLong},
		{"4-byte data prefix, input ends", []byte{0xc0, 0x80, 0x80}, nil, ErrTooLong},
		{"max padding", withData([]byte{0x7f, 0xff, 0x7f}, maxData, hello), []byte("hello"), nil},
		{"4-byte padding prefix", withData([]byte{0x60, 0x80, 0x80, 0x80}, maxData, append([]byte{'X'}, hello...)), nil, ErrTooLong},
		{"4-byte padding prefix of 0", withData([]byte{0x40, 0x80, 0x80, 0x80}, nil, hello), nil, ErrTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, rk := range readerKinds {
				p := make([]byte, MaxLength+1)
				n, err := ReadData(rk.wrap(tt.enc), p)
				if err != tt.wantErr {
					t.Fatalf("%s: error %v, want %v", rk.name, err, tt.wantErr)
				}
				if tt.wantErr != nil {
					if n != 0 {
						t.Fatalf("%s: n = %d with error", rk.name, n)
					}
					continue
				}
				if !bytes.Equal(p[:n], tt.want) {
					t.Fatalf("%s: read %d bytes, want %d", rk.name, n, len(tt.want))
				}
			}
		})
	}
}

func TestWriteLimits(t *testing.T) {
	for _, wk := range writerKinds {
		t.Run(wk.name, func(t *testing.T) {
			wk.run(t, func(w io.Writer) {
				if n, err := WriteData(w, make([]byte, MaxLength)); n != MaxLength+3 || err != nil {
					t.Fatalf("WriteData(MaxLength) = (%d, %v), want (%d, nil)", n, err, MaxLength+3)
				}
			})
			enc := wk.run(t, func(w io.Writer) {
				if n, err := WriteData(w, make([]byte, MaxLength+1)); n != 0 || err != ErrTooLong {
					t.Fatalf("WriteData(MaxLength+1) = (%d, %v), want (0, ErrTooLong)", n, err)
				}
			})
			if len(enc) != 0 {
				t.Fatalf("WriteData(MaxLength+1) wrote %d bytes", len(enc))
			}
			// The padding prefix counts in the length, and padding longer
			// than one chunk can hold is split.
			for _, size := range []int{MaxLength + 3, MaxLength + 4} {
				enc := wk.run(t, func(w io.Writer) {
					if n, err := WritePadding(w, size); n != size || err != nil {
						t.Fatalf("WritePadding(%d) = (%d, %v)", size, n, err)
					}
				})
				if len(enc) != size {
					t.Fatalf("WritePadding(%d) wrote %d bytes", size, len(enc))
				}
			}
		})
	}
}

// TestNegativeLength: Snowflake panics; we return an error and write nothing.
func TestNegativeLength(t *testing.T) {
	for _, n := range []int{-1, ^0, -1 << 62} {
		var buf bytes.Buffer
		got, err := WritePadding(&buf, n)
		if got != 0 || !errors.Is(err, ErrNegativeLength) || buf.Len() != 0 {
			t.Errorf("WritePadding(%d) = (%d, %v), wrote %d bytes; want (0, ErrNegativeLength), nothing", n, got, err, buf.Len())
		}
	}
}

func TestReadDataTruncate(t *testing.T) {
	var enc bytes.Buffer
	mustWriteData(t, &enc, []byte("12345678"))
	mustWritePadding(t, &enc, 7)
	mustWriteData(t, &enc, []byte("abcdefghijklmnopqrstuvwxyz"))
	mustWriteData(t, &enc, []byte("next"))
	mustWriteData(t, &enc, make([]byte, 3000))
	mustWriteData(t, &enc, []byte("last"))
	// Each short read discards the rest of its chunk: the next read starts
	// at the next chunk.
	steps := []struct {
		bufLen  int
		want    string
		wantErr error
	}{
		{4, "1234", io.ErrShortBuffer},
		{10, "abcdefghij", io.ErrShortBuffer},
		{4, "next", nil},
		{1, "\x00", io.ErrShortBuffer},
		{4, "last", nil},
		{10, "", io.EOF},
	}
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			r := rk.wrap(enc.Bytes())
			for i, s := range steps {
				p := make([]byte, s.bufLen)
				n, err := ReadData(r, p)
				if err != s.wantErr || string(p[:n]) != s.want {
					t.Fatalf("step %d: (%q, %v), want (%q, %v)", i, p[:n], err, s.want, s.wantErr)
				}
			}
		})
	}
}

// TestReadDataTruncateFull: a zero-length buffer reads nothing from each
// chunk, reports io.ErrShortBuffer for non-empty chunks and nil for empty
// ones, and still skips padding and keeps chunk boundaries.
func TestReadDataTruncateFull(t *testing.T) {
	var enc bytes.Buffer
	mustWriteData(t, &enc, []byte("hello"))
	mustWritePadding(t, &enc, 300)
	mustWriteData(t, &enc, nil)
	mustWriteData(t, &enc, make([]byte, 70000))
	mustWriteData(t, &enc, []byte("x"))
	want := []error{io.ErrShortBuffer, nil, io.ErrShortBuffer, io.ErrShortBuffer, io.EOF}
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			r := rk.wrap(enc.Bytes())
			for i, w := range want {
				n, err := ReadData(r, nil)
				if n != 0 || err != w {
					t.Fatalf("chunk %d: (%d, %v), want (0, %v)", i, n, err, w)
				}
			}
		})
	}
}

// TestReadDataTruncateUnexpectedEOF: input ending in the discarded tail of
// a truncated chunk is io.ErrUnexpectedEOF, not io.ErrShortBuffer.
func TestReadDataTruncateUnexpectedEOF(t *testing.T) {
	enc := []byte{0x85, 'h', 'e', 'l'}
	for _, rk := range readerKinds {
		n, err := ReadData(rk.wrap(enc), make([]byte, 2))
		if n != 0 || err != io.ErrUnexpectedEOF {
			t.Fatalf("%s: (%d, %v), want (0, ErrUnexpectedEOF)", rk.name, n, err)
		}
	}
}

// TestReadErrorPassedThrough: errors from the reader other than EOF are
// returned unchanged.
func TestReadErrorPassedThrough(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name string
		r    io.Reader
	}{
		{"first byte", iotest.ErrReader(boom)},
		{"prefix", io.MultiReader(bytes.NewReader([]byte{0xc0}), iotest.ErrReader(boom))},
		{"data", io.MultiReader(bytes.NewReader([]byte{0x85, 'a'}), iotest.ErrReader(boom))},
		{"padding", io.MultiReader(bytes.NewReader([]byte{0x05, 0}), iotest.ErrReader(boom))},
	}
	for _, tt := range tests {
		if n, err := ReadData(tt.r, make([]byte, 10)); n != 0 || err != boom {
			t.Errorf("%s: (%d, %v), want (0, boom)", tt.name, n, err)
		}
	}
}

// errWriter fails after accepting limit bytes.
type errWriter struct {
	limit int
	buf   bytes.Buffer
}

var errWriterFull = errors.New("writer full")

func (w *errWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) > w.limit {
		n := w.limit - w.buf.Len()
		w.buf.Write(p[:n])
		return n, errWriterFull
	}
	return w.buf.Write(p)
}

func TestWriteErrors(t *testing.T) {
	w := &errWriter{limit: 3}
	if n, err := WriteData(w, []byte("hello")); n != 3 || err != errWriterFull {
		t.Errorf("WriteData = (%d, %v), want (3, errWriterFull)", n, err)
	}
	w = &errWriter{limit: 1030}
	if n, err := WritePadding(w, 3000); n != 1030 || err != errWriterFull {
		t.Errorf("WritePadding = (%d, %v), want (1030, errWriterFull)", n, err)
	}
}

// TestWriteDataOneWrite: a message-oriented writer sees each chunk as one
// Write, whichever path WriteData takes.
func TestWriteDataOneWrite(t *testing.T) {
	for _, size := range []int{0, 1, 1400, 100000} {
		var writes [][]byte
		w := writerFunc(func(p []byte) (int, error) {
			writes = append(writes, bytes.Clone(p))
			return len(p), nil
		})
		mustWriteData(t, w, make([]byte, size))
		if len(writes) != 1 || len(writes[0]) != size+prefixLength(size) {
			t.Fatalf("size %d: %d writes", size, len(writes))
		}
		// Through a bufio.Writer the chunk reaches the underlying writer
		// in one Write too (when it fits the buffer).
		writes = nil
		bw := bufio.NewWriterSize(w, 2048)
		mustWriteData(t, bw, make([]byte, min(size, 2045)))
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
		if len(writes) != 1 {
			t.Fatalf("size %d through bufio: %d writes", size, len(writes))
		}
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func BenchmarkReadData(b *testing.B) {
	for _, size := range []int{150, 1400, 3000} {
		var stream bytes.Buffer
		mustWriteData(b, &stream, pseudorandom(size))
		enc := stream.Bytes()
		br := bytes.NewReader(enc)
		p := make([]byte, 4096)
		b.Run(sizeName(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				br.Reset(enc)
				if _, err := ReadData(br, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkWriteData(b *testing.B) {
	for _, size := range []int{150, 1400, 3000} {
		payload := pseudorandom(size)
		bw := bufio.NewWriterSize(io.Discard, 4096)
		b.Run(sizeName(size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := WriteData(bw, payload); err != nil {
					b.Fatal(err)
				}
				if err := bw.Flush(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func sizeName(n int) string {
	switch n {
	case 150:
		return "150B"
	case 1400:
		return "1400B"
	default:
		return "3000B"
	}
}

// TestReadChunkReportsPadding: ReadChunk returns after each chunk, padding
// included, so that a reader sees padding arrive.
func TestReadChunkReportsPadding(t *testing.T) {
	var b bytes.Buffer
	if _, err := WritePadding(&b, 3); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteData(&b, []byte("hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := WritePadding(&b, 200); err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 16)
	for i, want := range []struct {
		n    int
		data bool
		err  error
	}{{0, false, nil}, {2, true, nil}, {0, false, nil}, {0, false, io.EOF}} {
		n, data, err := ReadChunk(&b, p)
		if n != want.n || data != want.data || err != want.err {
			t.Errorf("chunk %d: %d, %v, %v; want %d, %v, %v", i, n, data, err, want.n, want.data, want.err)
		}
		if data && string(p[:n]) != "hi" {
			t.Errorf("chunk %d: data %q, want \"hi\"", i, p[:n])
		}
	}
}
