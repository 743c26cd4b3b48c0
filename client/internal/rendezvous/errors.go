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

// ErrNoCacheURL is returned by NewAMP without an AMP cache URL.
var ErrNoCacheURL = errors.New("no AMP cache URL")

// ErrCacheURL is returned by NewAMP for an AMP cache URL that is not an
// absolute http or https URL without user information, query or fragment.
var ErrCacheURL = errors.New("invalid AMP cache URL")

// ErrRedirect is returned by the AMP Exchange when the cache's reply
// carries a Location header (a redirect around the cache).
var ErrRedirect = errors.New("AMP cache redirect")
