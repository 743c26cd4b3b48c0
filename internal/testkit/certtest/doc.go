// Package certtest makes the TLS certificates tests need: a self-signed
// ECDSA P-256 certificate for some hosts, with a pool that trusts it and
// its PEM, in memory or as files.
package certtest
