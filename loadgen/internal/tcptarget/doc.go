// Package tcptarget serves the TCP targets a relay or a chain forwards to
// on loopback: echo, sink, source, a fixed pseudo-random stream, and the
// mixed target of bulk and interactive users.
package tcptarget
