package encapsulation

import (
	"io"
)

const (
	// MaxLength is the largest length a 3-byte prefix can encode: the
	// largest data chunk WriteData accepts.
	MaxLength = 1<<(6+7+7) - 1 // 0xFFFFF

	// MaxPrefixLength is the longest valid length prefix, in bytes.
	MaxPrefixLength = 3

	// maxPaddingChunk is the largest padding chunk WritePadding writes,
	// prefix included (Snowflake's value, kept for byte-exact output).
	maxPaddingChunk = 1024

	dataBit         = 0x80 // first prefix byte: 1 = data, 0 = padding
	firstMoreBit    = 0x40 // first prefix byte: another prefix byte follows
	firstValueMask  = 0x3f // first prefix byte: 6 length bits
	contMoreBit     = 0x80 // continuation byte: another prefix byte follows
	contValueMask   = 0x7f // continuation byte: 7 length bits
	minimalOneByte  = firstValueMask
	minimalTwoBytes = firstValueMask<<7 | contValueMask
)

// prefixLength returns the length of the minimal prefix for a chunk of n
// bytes, or 0 if n does not fit in MaxPrefixLength bytes. n must not be
// negative.
func prefixLength(n int) int {
	switch {
	case n <= minimalOneByte:
		return 1
	case n <= minimalTwoBytes:
		return 2
	case n <= MaxLength:
		return 3
	default:
		return 0
	}
}

// appendPrefix appends the k-byte prefix for a chunk of n bytes to b. first
// is dataBit for data and 0 for padding; k is 1, 2 or 3 and large enough for
// n.
func appendPrefix(b []byte, first byte, n, k int) []byte {
	switch k {
	case 1:
		return append(b, first|byte(n&firstValueMask))
	case 2:
		return append(b,
			first|firstMoreBit|byte((n>>7)&firstValueMask),
			byte(n&contValueMask))
	default:
		return append(b,
			first|firstMoreBit|byte((n>>14)&firstValueMask),
			contMoreBit|byte((n>>7)&contValueMask),
			byte(n&contValueMask))
	}
}

// availableBufferWriter is implemented by *bufio.Writer and *bytes.Buffer:
// appending to AvailableBuffer and writing the result back copies nothing
// extra and allocates nothing while it fits.
type availableBufferWriter interface {
	io.Writer
	AvailableBuffer() []byte
}

// ReadData reads the next data chunk from r into p and returns its length,
// skipping any padding chunks before it.
//
// If the chunk is longer than p, ReadData copies the first len(p) bytes,
// discards the rest of the chunk (so the next call starts at the next
// chunk) and returns len(p), io.ErrShortBuffer.
//
// The error is io.EOF only when r ends at a chunk boundary (before the first
// byte of a length prefix); when r ends inside a prefix, a padding chunk or a
// data chunk it is io.ErrUnexpectedEOF. A length prefix longer than 3 bytes
// gives ErrTooLong. Errors from r are returned unchanged. The count is 0
// unless the error is nil or io.ErrShortBuffer.
//
// ReadData may use all of p as scratch space, even when it returns an error.
// It reads r one byte at a time while parsing prefixes, so give it a
// buffered reader (*bufio.Reader) unless r is already buffered in memory.
func ReadData(r io.Reader, p []byte) (int, error) {
	for {
		n, data, err := ReadChunk(r, p)
		if data || err != nil {
			return n, err
		}
	}
}

// ReadChunk reads the next chunk from r: a data chunk as ReadData does
// (data is true), or a padding chunk, which it discards (data is false, n
// is 0). It returns after one chunk, so that a caller waiting for input
// between chunks sees padding arrive. Errors are ReadData's.
func ReadChunk(r io.Reader, p []byte) (n int, data bool, err error) {
	b, err := readByte(r, p)
	if err != nil {
		// The only place an io.EOF is passed through.
		return 0, false, err
	}
	isData := b&dataBit != 0
	more := b&firstMoreBit != 0
	n = int(b & firstValueMask)
	for i := 1; more; i++ {
		if i == MaxPrefixLength {
			return 0, false, ErrTooLong
		}
		b, err = readByte(r, p)
		if err != nil {
			return 0, false, unexpectedEOF(err)
		}
		more = b&contMoreBit != 0
		n = n<<7 | int(b&contValueMask)
	}

	if !isData {
		return 0, false, discard(r, n, p)
	}

	m := min(n, len(p))
	if _, err := io.ReadFull(r, p[:m]); err != nil {
		return 0, false, unexpectedEOF(err)
	}
	if m < n {
		// p holds the data now: discard the tail without it.
		if err := discard(r, n-m, nil); err != nil {
			return 0, false, err
		}
		return m, true, io.ErrShortBuffer
	}
	return m, true, nil
}

// unexpectedEOF turns io.EOF into io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readByte reads one byte from r, using scratch[:1] as the destination when
// r is not an io.ByteReader (a local array would escape to the heap).
func readByte(r io.Reader, scratch []byte) (byte, error) {
	if br, ok := r.(io.ByteReader); ok {
		return br.ReadByte()
	}
	var b []byte
	if len(scratch) > 0 {
		b = scratch[:1]
	} else {
		b = make([]byte, 1)
	}
	if _, err := io.ReadFull(r, b); err != nil {
		return 0, err
	}
	return b[0], nil
}

// discarder is implemented by *bufio.Reader.
type discarder interface {
	Discard(n int) (int, error)
}

// discard skips n bytes of r, using scratch (which may be nil) as a read
// buffer. Running out of input is io.ErrUnexpectedEOF.
func discard(r io.Reader, n int, scratch []byte) error {
	if n == 0 {
		return nil
	}
	if d, ok := r.(discarder); ok {
		_, err := d.Discard(n)
		return unexpectedEOF(err)
	}
	const minScratch = 512
	if len(scratch) < minScratch && n > len(scratch) {
		if br, ok := r.(io.ByteReader); ok && n <= 4*minScratch {
			for range n {
				if _, err := br.ReadByte(); err != nil {
					return unexpectedEOF(err)
				}
			}
			return nil
		}
		scratch = make([]byte, min(n, 4096))
	}
	for n > 0 {
		k := min(n, len(scratch))
		if _, err := io.ReadFull(r, scratch[:k]); err != nil {
			return unexpectedEOF(err)
		}
		n -= k
	}
	return nil
}

// WriteData writes p to w as one data chunk with the shortest length prefix
// and returns the number of bytes written, prefix included. If p is longer
// than MaxLength it writes nothing and returns 0, ErrTooLong.
//
// With a *bufio.Writer or *bytes.Buffer that has room for the chunk,
// WriteData calls Write exactly once and allocates nothing. With other
// io.ByteWriters it writes the prefix byte by byte, then p. With any other
// writer it allocates one buffer and writes the whole chunk in one Write, so
// a message-oriented writer sends one message per chunk.
func WriteData(w io.Writer, p []byte) (int, error) {
	k := prefixLength(len(p))
	if k == 0 {
		return 0, ErrTooLong
	}
	size := k + len(p)
	if aw, ok := w.(availableBufferWriter); ok {
		if buf := aw.AvailableBuffer(); cap(buf) >= size {
			buf = appendPrefix(buf, dataBit, len(p), k)
			buf = append(buf, p...)
			return aw.Write(buf)
		}
	}
	if bw, ok := w.(io.ByteWriter); ok {
		var prefix [MaxPrefixLength]byte
		appendPrefix(prefix[:0], dataBit, len(p), k)
		for i := range k {
			if err := bw.WriteByte(prefix[i]); err != nil {
				return i, err
			}
		}
		n, err := w.Write(p)
		return k + n, err
	}
	buf := make([]byte, 0, size)
	buf = appendPrefix(buf, dataBit, len(p), k)
	buf = append(buf, p...)
	return w.Write(buf)
}

// WritePadding writes padding chunks to w whose total size, prefixes
// included, is exactly n bytes, and returns the number of bytes written.
// Each chunk is at most 1024 bytes long, and the bytes are those Snowflake
// writes (zero padding, same chunking). A negative n writes nothing and
// returns 0, ErrNegativeLength; n = 0 writes nothing.
func WritePadding(w io.Writer, n int) (int, error) {
	if n < 0 {
		return 0, ErrNegativeLength
	}
	total := 0
	var scratch []byte
	for n > 0 {
		chunk := min(n, maxPaddingChunk)
		n -= chunk
		// The prefix is part of the chunk: the smallest k whose prefix
		// can announce chunk-k bytes (the same choice as Snowflake's).
		k := 1
		for prefixLength(chunk-k) > k {
			k++
		}
		var buf []byte
		aw, ok := w.(availableBufferWriter)
		if ok {
			buf = aw.AvailableBuffer()
		}
		if !ok || cap(buf) < chunk {
			if scratch == nil {
				scratch = make([]byte, 0, min(chunk+n, maxPaddingChunk))
			}
			buf = scratch[:0]
		}
		buf = appendPrefix(buf, 0, chunk-k, k)
		buf = buf[:chunk] // cap(buf) >= chunk
		clear(buf[k:])
		nn, err := w.Write(buf)
		total += nn
		if err != nil {
			return total, err
		}
		if nn != len(buf) {
			return total, io.ErrShortWrite
		}
	}
	return total, nil
}
