// Package tortest runs real tor for the demo's tor tests: a bridge whose
// pluggable transport is flurry-relay, a client whose transport is
// flurry-client, tor instances behind the relay's ExtORPort backends, and
// a private tor network (directory authority and exit relays on loopback)
// so that nothing contacts the Tor network. It needs Debian's tor.
package tortest
