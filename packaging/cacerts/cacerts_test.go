package cacerts

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"testing"

	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// TestPEM: every block is a CA certificate, every unconstrained root of the
// bundle is there and no constrained one, and widely used roots (Let's
// Encrypt's, DigiCert's) are among them.
func TestPEM(t *testing.T) {
	data := PEM()
	if !bytes.Equal(data, PEM()) {
		t.Fatal("two calls differ")
	}
	var n int
	subjects := map[string]bool{}
	for rest := data; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			if len(bytes.TrimSpace(rest)) != 0 {
				t.Fatalf("%d bytes that are not PEM at the end", len(rest))
			}
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			t.Fatalf("block %d: %v", n, err)
		}
		if !c.IsCA {
			t.Errorf("%s is not a CA", c.Subject)
		}
		subjects[c.Subject.CommonName] = true
		n++
	}
	var unconstrained, constrained int
	for r := range bundle.Roots() {
		if r.Constraint == nil {
			unconstrained++
		} else {
			constrained++
		}
	}
	if n != unconstrained || n < 100 {
		t.Errorf("%d certificates, want the bundle's %d unconstrained roots (%d constrained ones left out)", n, unconstrained, constrained)
	}
	for _, cn := range []string{"ISRG Root X1", "ISRG Root X2", "DigiCert Global Root G2"} {
		if !subjects[cn] {
			t.Errorf("no %s", cn)
		}
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		t.Error("crypto/x509 reads no certificate from it")
	}
}
