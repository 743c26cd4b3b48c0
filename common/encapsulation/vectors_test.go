package encapsulation

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The stream in testdata/encapsulation-stream.bin, written by Snowflake
// v2.14.1 (see testdata/README.md).
var (
	vectorDataSizes = []int{0, 1, 63, 64, 1400, 8191, 8192, 100000}
	vectorPadding   = []int{5, 200}
	vectorLast      = []byte("after padding")
)

func readVector(tb testing.TB) []byte {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "encapsulation-stream.bin"))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func countingBytes(n int) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i)
	}
	return p
}

func TestSnowflakeStreamRead(t *testing.T) {
	enc := readVector(t)
	for _, rk := range readerKinds {
		t.Run(rk.name, func(t *testing.T) {
			r := rk.wrap(enc)
			p := make([]byte, 100001)
			for _, size := range vectorDataSizes {
				n, err := ReadData(r, p)
				if err != nil {
					t.Fatalf("chunk of %d: %v", size, err)
				}
				if !bytes.Equal(p[:n], countingBytes(size)) {
					t.Fatalf("chunk of %d: read %d bytes, contents differ", size, n)
				}
			}
			// The padding chunks are skipped.
			n, err := ReadData(r, p)
			if err != nil || !bytes.Equal(p[:n], vectorLast) {
				t.Fatalf("last chunk: (%q, %v), want (%q, nil)", p[:n], err, vectorLast)
			}
			if n, err := ReadData(r, p); n != 0 || err != io.EOF {
				t.Fatalf("after last chunk: (%d, %v), want (0, EOF)", n, err)
			}
		})
	}
}

func TestSnowflakeStreamWrite(t *testing.T) {
	want := readVector(t)
	for _, wk := range writerKinds {
		t.Run(wk.name, func(t *testing.T) {
			got := wk.run(t, func(w io.Writer) {
				for _, size := range vectorDataSizes {
					mustWriteData(t, w, countingBytes(size))
				}
				for _, n := range vectorPadding {
					mustWritePadding(t, w, n)
				}
				mustWriteData(t, w, vectorLast)
			})
			if !bytes.Equal(got, want) {
				i := 0
				for i < min(len(got), len(want)) && got[i] == want[i] {
					i++
				}
				t.Fatalf("wrote %d bytes, want %d; first difference at offset %d", len(got), len(want), i)
			}
		})
	}
}

// FuzzReadData: ReadData never panics or loops on any input, reports
// counts within its buffer, and reads back whatever WriteData writes.
func FuzzReadData(f *testing.F) {
	f.Add([]byte{}, uint16(10))
	f.Add([]byte{0x85, 'h', 'e', 'l', 'l', 'o'}, uint16(3))
	f.Add([]byte{0x04, 0, 0, 0, 0, 0x81, 'x'}, uint16(1))
	f.Add([]byte{0xc0, 0x80, 0x80, 0x80}, uint16(0))
	f.Add([]byte{0xff, 0xff, 0x7f}, uint16(100))
	f.Add([]byte{0x41, 0x46, 0x00}, uint16(2048))
	f.Fuzz(func(t *testing.T, data []byte, bufLen uint16) {
		// Decode arbitrary input.
		for _, r := range []io.Reader{bytes.NewReader(data), struct{ io.Reader }{bytes.NewReader(data)}, bufio.NewReaderSize(bytes.NewReader(data), 16)} {
			p := make([]byte, bufLen)
			for range len(data) + 1 {
				n, err := ReadData(r, p)
				if n < 0 || n > len(p) {
					t.Fatalf("n = %d with len(p) = %d", n, len(p))
				}
				if n != 0 && err != nil && err != io.ErrShortBuffer {
					t.Fatalf("n = %d with error %v", n, err)
				}
				if err != nil && err != io.ErrShortBuffer {
					break
				}
			}
		}
		// Round trip.
		var buf bytes.Buffer
		if _, err := WritePadding(&buf, int(bufLen%2048)); err != nil {
			t.Fatal(err)
		}
		if _, err := WriteData(&buf, data); err != nil {
			t.Fatal(err)
		}
		p := make([]byte, len(data))
		n, err := ReadData(&buf, p)
		if err != nil || !bytes.Equal(p[:n], data) {
			t.Fatalf("round trip: (%x, %v), want %x", p[:n], err, data)
		}
		if n, err := ReadData(&buf, p); n != 0 || err != io.EOF {
			t.Fatalf("after round trip: (%d, %v), want (0, EOF)", n, err)
		}
	})
}
