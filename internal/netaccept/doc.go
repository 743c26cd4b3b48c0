// Package netaccept is what Flurry's servers do when Accept fails. An
// error that may go away by itself (out of file descriptors or memory, a
// connection aborted or reset before it was accepted, an interrupted call)
// pauses the accept loop, MinBackoff after the first failure and doubling
// up to MaxBackoff; any other error ends the loop, so that a server does not
// stay up accepting nothing.
package netaccept
