// Package rendezvous carries a client's poll request to the broker and brings
// back the broker's reply: the first step of every proxy connection.
//
// A rendezvous method is anything with
//
//	Exchange(ctx context.Context, request []byte) (response []byte, error)
//
// where request is an encoded messages.ClientPollRequest ("1.0\n{json}") and
// response the broker's encoded messages.ClientPollResponse. HTTP implements
// Snowflake's HTTPS method with domain fronting; AMP cache and SQS (Snowflake
// v2.14.1 has both) plug in behind the same signature.
//
// # HTTP and domain fronting
//
// Exchange POSTs the request to the broker URL resolved against "client"
// (https://broker.example/ becomes https://broker.example/client). With
// fronts, every request picks one at random and the three places a host
// name appears on the wire are split:
//
//	URL host (where the TCP connection goes)  front, e.g. www.cdn.example
//	TLS SNI (visible to the censor)           front (the TLS layer uses the URL host)
//	HTTP Host header (inside TLS)             broker host, e.g. broker.example
//
// so that an observer sees a connection to the front while the CDN routes
// the request to the broker. Without fronts all three are the broker host.
//
// The broker holds a client request up to 5 s while it waits for a proxy's
// answer (Snowflake's ClientTimeout); a reply must be 200 with a body of at
// most MaxResponseSize bytes, anything else is an error. The whole exchange
// is bounded by HTTPConfig.Timeout (DefaultTimeout: the 5 s broker budget
// plus room for the CDN and the network).
//
// # Transport
//
// NewTransport builds the http.RoundTripper the HTTP method uses: its own
// http.Transport (never http.DefaultTransport), no environment proxies, and
// optionally a uTLS ClientHello that imitates a browser (the utls-imitate
// bridge-line option), with HTTP/2 or HTTP/1.1 chosen by the ALPN result.
package rendezvous
