package cacerts

import (
	"bytes"
	"encoding/pem"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// PEM returns the bundle's roots as concatenated PEM CERTIFICATE blocks,
// in the bundle's order. Roots that carry a constraint a PEM file cannot
// express (NSS's "distrust after" date for new certificates) are left out:
// a client would otherwise trust what NSS no longer does.
func PEM() []byte {
	var b bytes.Buffer
	for root := range bundle.Roots() {
		if root.Constraint != nil {
			continue
		}
		// Writing to a bytes.Buffer does not fail.
		_ = pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: root.Certificate})
	}
	return b.Bytes()
}
