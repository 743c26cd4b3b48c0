package nat

import "errors"

// ErrNoRFC5780 is returned by Probe when the STUN server does not announce
// an OTHER-ADDRESS (Snowflake: "NAT discovery feature not supported").
var ErrNoRFC5780 = errors.New("NAT discovery feature not supported")

// errNoMappedAddress is returned by Probe when a reply carries no mapped
// address.
var errNoMappedAddress = errors.New("no mapped address in STUN reply")

// ErrNoServers is returned by Detect when it has no STUN server to ask.
var ErrNoServers = errors.New("no STUN server")
