package certtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is a self-signed certificate and what a test does with it.
type Cert struct {
	// TLS is the certificate with its private key, for a tls.Config.
	TLS tls.Certificate
	// Leaf is the parsed certificate.
	Leaf *x509.Certificate
	// Pool trusts the certificate (as its own root).
	Pool *x509.CertPool
	// CertPEM and KeyPEM are the certificate and its key in PEM.
	CertPEM, KeyPEM []byte
}

// Make returns a self-signed ECDSA P-256 certificate for hosts: DNS names
// or IP addresses, the first also its common name (none: a certificate
// for no host, as pion makes for DTLS). It is valid from an hour ago for a
// day, for TLS servers and clients, and is its own root.
func Make(hosts ...string) (Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return Cert{}, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return Cert{}, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	for i, h := range hosts {
		if i == 0 {
			tmpl.Subject = pkix.Name{CommonName: h}
		}
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return Cert{}, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return Cert{}, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return Cert{}, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return Cert{
		TLS:     tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Leaf:    leaf,
		Pool:    pool,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// New is Make for a test, which it fails on an error.
func New(tb testing.TB, hosts ...string) Cert {
	tb.Helper()
	c, err := Make(hosts...)
	if err != nil {
		tb.Fatalf("certificate for %q: %v", hosts, err)
	}
	return c
}

// Files writes the certificate and its key as PEM files (mode 0600) in a
// directory of the test's and returns their paths.
func (c Cert) Files(tb testing.TB) (certFile, keyFile string) {
	tb.Helper()
	dir := tb.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for path, b := range map[string][]byte{certFile: c.CertPEM, keyFile: c.KeyPEM} {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			tb.Fatal(fmt.Errorf("write %s: %w", path, err))
		}
	}
	return certFile, keyFile
}
