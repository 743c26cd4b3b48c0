package encapsulation

import (
	"bufio"
	"bytes"
	"io"
	"testing"
)

// TestAllocs locks ReadData, WriteData and WritePadding at zero heap
// allocations per chunk (measured with go1.26: 0 for every case, with or
// without the race detector, as nothing here is pooled). The cases are the
// readers and writers the data path uses: the relay's carrier reads each
// chunk through a plain io.Reader (its prefixedReader over a WebSocket
// connection, so ReadData takes the scratch-byte path) and writes chunks
// into a pooled *bytes.Buffer (the AvailableBuffer path); clients and
// proxies use bufio. 0 is the floor: a chunk's bytes are copied into the
// caller's buffer or the writer's, never into a new one. (Not counted: a
// chunk longer than the caller's buffer read from a plain reader costs one
// discard buffer; no well-behaved peer sends one, as KCP packets are never
// longer than the relay's packet buffer, KCP's MTU.)
func TestAllocs(t *testing.T) {
	payload := pseudorandom(1400)
	var stream bytes.Buffer
	mustWritePadding(t, &stream, 300)
	mustWriteData(t, &stream, payload)
	enc := stream.Bytes()
	br := bytes.NewReader(enc)
	bufr := bufio.NewReader(br)
	var plain io.Reader = struct{ io.Reader }{br}
	p := make([]byte, 2048)
	bw := bufio.NewWriterSize(io.Discard, 4096)
	msg := bytes.NewBuffer(make([]byte, 0, 4096))
	tests := []struct {
		name string
		f    func()
	}{
		{"ReadData bytes.Reader", func() {
			br.Reset(enc)
			if _, err := ReadData(br, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"ReadData bufio.Reader", func() {
			br.Reset(enc)
			bufr.Reset(br)
			if _, err := ReadData(bufr, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"ReadData plain", func() {
			br.Reset(enc)
			if _, err := ReadData(plain, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"WriteData bufio.Writer", func() {
			if _, err := WriteData(bw, payload); err != nil {
				t.Fatal(err)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
		}},
		{"WriteData bytes.Buffer", func() {
			msg.Reset()
			if _, err := WriteData(msg, payload); err != nil {
				t.Fatal(err)
			}
		}},
		{"WritePadding bufio.Writer", func() {
			if _, err := WritePadding(bw, 1000); err != nil {
				t.Fatal(err)
			}
			if err := bw.Flush(); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		if allocs := testing.AllocsPerRun(100, tt.f); allocs != 0 {
			t.Errorf("%s: %v allocs per run, want 0", tt.name, allocs)
		}
	}
}
