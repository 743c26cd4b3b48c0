// Package cacerts makes the CA certificate file of the container images,
// /etc/ssl/certs/ca-certificates.crt, from the root certificates of Mozilla's
// NSS trust store as golang.org/x/crypto/x509roots/fallback/bundle carries
// them (the bundle Go's own fallback roots use). Its version is pinned in
// go.mod and its content by go.sum, which the go command checks against
// the Go checksum database: the same source tree always gives the same
// file, on any machine, with no download from elsewhere.
package cacerts
