package amp

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strings"
)

// pathFormat is the only path format indicator.
const pathFormat = '0'

// cacheBusterBytes is the number of random bytes before the '/' (12
// base64url characters).
const cacheBusterBytes = 9

// EncodePath returns data encoded as the last part of an AMP request path
// (see the package documentation): '0', a random 12-character cache-buster,
// '/', base64url-nopad(data). Every call returns a different string.
func EncodePath(data []byte) string {
	enc := base64.RawURLEncoding
	var buster [cacheBusterBytes]byte
	_, _ = rand.Read(buster[:]) // never fails (crypto/rand aborts the program instead)
	n := enc.EncodedLen(cacheBusterBytes)
	out := make([]byte, 1+n+1+enc.EncodedLen(len(data)))
	out[0] = pathFormat
	enc.Encode(out[1:], buster[:])
	out[1+n] = '/'
	enc.Encode(out[2+n:], data)
	return string(out)
}

// DecodePath decodes a path made by EncodePath. path must start at the format
// indicator (any routing prefix such as "/amp/client/" removed); everything
// between the indicator and the last '/' is ignored.
func DecodePath(path string) ([]byte, error) {
	if path == "" {
		return nil, ErrMissingFormat
	}
	if path[0] != pathFormat {
		return nil, fmt.Errorf("%w %q", ErrUnknownFormat, path[0])
	}
	i := strings.LastIndexByte(path[1:], '/')
	if i < 0 {
		return nil, ErrMissingData
	}
	data, err := base64.RawURLEncoding.DecodeString(path[1+i+1:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPathData, err)
	}
	return data, nil
}
