package encapsulation

// AppendDataPrefix appends to b the shortest length prefix of a data chunk
// of n bytes, for callers that produce the chunk's bytes in place (sealing
// them, for example) rather than copy them in. It returns ErrTooLong, and b
// unchanged, if n is negative or longer than MaxLength.
func AppendDataPrefix(b []byte, n int) ([]byte, error) {
	if n < 0 {
		return b, ErrTooLong
	}
	k := prefixLength(n)
	if k == 0 {
		return b, ErrTooLong
	}
	return appendPrefix(b, dataBit, n, k), nil
}
