// Package encapsulation frames variable-size chunks of data and padding in a
// byte stream, wire-compatible with Snowflake v2.14.1's
// common/encapsulation. The client ⇄ relay data path uses it to carry one
// KCP packet per data chunk over a DataChannel or WebSocket byte stream.
//
// # Wire format
//
// Every chunk is a length prefix followed by that many bytes of data or
// padding. The first prefix byte carries a data bit d (1 = data,
// 0 = padding), a continuation bit c and 6 length bits x:
//
//	  7   6   5   4   3   2   1   0
//	+---+---+---+---+---+---+---+---+
//	| d | c | x   x   x   x   x   x |   first prefix byte
//	+---+---+---+---+---+---+---+---+
//
// When c is 1 another prefix byte follows, with its own continuation bit and
// 7 more length bits y (then z), most significant bits first:
//
//	+---+---+---+---+---+---+---+---+
//	| c | y   y   y   y   y   y   y |   continuation byte
//	+---+---+---+---+---+---+---+---+
//
// Prefixes are at most 3 bytes long, so these are the only valid prefixes:
//
//	00xxxxxx                     xxxxxx₂ bytes of padding
//	10xxxxxx                     xxxxxx₂ bytes of data
//	01xxxxxx 0yyyyyyy            xxxxxxyyyyyyy₂ bytes of padding
//	11xxxxxx 0yyyyyyy            xxxxxxyyyyyyy₂ bytes of data
//	01xxxxxx 1yyyyyyy 0zzzzzzz   xxxxxxyyyyyyyzzzzzzz₂ bytes of padding
//	11xxxxxx 1yyyyyyy 0zzzzzzz   xxxxxxyyyyyyyzzzzzzz₂ bytes of data
//
// The largest length is 0xFFFFF (1 048 575). A prefix whose third byte
// still has its continuation bit set is rejected with [ErrTooLong], whatever
// length it would encode. Longer-than-needed prefixes are valid (0x84 and
// 0xC0 0x04 both announce 4 bytes of data); [WriteData] always writes the
// shortest one. Example, the data chunk "hi" followed by 3 bytes of padding:
//
//	82 68 69 02 00 00
//	|  '---'  |  '---'
//	|  data   |  padding bytes (any value; WritePadding writes zeros)
//	|         padding prefix: d=0 c=0 length 2 (the prefix counts in WritePadding's n)
//	data prefix: d=1 c=0 length 2
//
// Readers skip padding ([ReadData] returns data chunks only). Snowflake never
// sends padding itself, but other clients do (one fork sends about 2 KB of
// padding right after the ClientID), so every reader must skip it.
//
// # Differences from Snowflake
//
// The wire format is identical. The Go API differs where Snowflake panics:
// [WritePadding] with a negative length returns [ErrNegativeLength].
// Snowflake's MaxDataForSize has no counterpart: nothing here sizes
// messages by it. WritePadding's 3-byte
// prefix masks its middle byte correctly (Snowflake masks it with 0x3f, a
// bug hidden by its 1024-byte chunk limit, which this package keeps too).
//
// # Allocations
//
// ReadData reads into the caller's buffer and allocates nothing when r is an
// [io.ByteReader] (a *bufio.Reader, *bytes.Reader, ...) or when p is not
// empty. WriteData allocates nothing and calls Write once when w has an
// AvailableBuffer method (a *bufio.Writer or *bytes.Buffer) with room for the
// chunk; otherwise it falls back to byte writes (io.ByteWriter) or, for
// plain writers, to one Write of a freshly allocated chunk, so that a
// message-oriented writer still sees one message per chunk.
package encapsulation
