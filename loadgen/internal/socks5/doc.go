// Package socks5 is the SOCKS5 client (RFC 1928, with RFC 1929
// user/password) through which the load generator reaches a chain's
// client.
package socks5
