package tcptarget

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
)

// randomStream is the generator of Random's stream.
func randomStream() *rand.ChaCha8 {
	return rand.NewChaCha8([32]byte{'f', 'l', 'u', 'r', 'r', 'y'})
}

// RandomStreamDigest is the SHA-256 of the first n bytes Random
// writes on a connection.
func RandomStreamDigest(n int64) []byte {
	h := sha256.New()
	_, _ = io.CopyN(h, randomStream(), n)
	return h.Sum(nil)
}
