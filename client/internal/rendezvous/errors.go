package rendezvous

import "errors"

// ErrNoBrokerURL is returned by NewHTTP without a broker URL.
var ErrNoBrokerURL = errors.New("no broker URL")

// ErrBrokerURL is returned by NewHTTP for a broker URL that is not an
// absolute http or https URL without user information.
var ErrBrokerURL = errors.New("invalid broker URL")

// ErrFront is returned by NewHTTP for a front that is not a valid host name
// (optionally with a port).
var ErrFront = errors.New("invalid front domain")

// ErrStatus is returned by Exchange when the broker replies with a status
// other than 200 OK (Snowflake: "Unexpected error, no answer.").
var ErrStatus = errors.New("unexpected broker response status")

// ErrResponseTooLarge is returned by Exchange when the broker's reply is
// longer than MaxResponseSize.
var ErrResponseTooLarge = errors.New("broker response too large")

// ErrUTLSName is returned by NewTransport for an unknown utls-imitate name.
var ErrUTLSName = errors.New("unknown uTLS ClientHello name")
