// Package rendezvous carries a client's poll request to the broker and brings
// back the broker's reply: the first step of every proxy connection.
//
// A rendezvous method is anything with
//
//	Exchange(ctx context.Context, request []byte) (response []byte, error)
//
// where request is an encoded messages.ClientPollRequest ("1.0\n{json}") and
// response the broker's encoded messages.ClientPollResponse. HTTP implements
// Snowflake's HTTPS method with domain fronting, AMP its AMP cache method;
// the SQS method, with the same signature, is the subpackage sqs (kept apart
// so that only it imports the AWS SDK).
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
// # AMP cache
//
// An AMP cache (for example Google's, https://cdn.ampproject.org/) only
// GETs pages, so AMP puts the request in the path (package amp):
//
//	broker URL   https://broker.example/
//	publisher    https://broker.example/amp/client/0<12-char cache-buster>/<base64url(request)>
//	cache URL    https://broker-example.cdn.ampproject.org/c/s/broker.example/amp/client/0.../...
//
// and GETs the cache URL, fronted as for HTTP (a random front in the URL
// host and TLS SNI, the cache host broker-example.cdn.ampproject.org in the
// Host header). The cache fetches the page from the broker, which answers
// with the response armored in an AMP page. A reply must be 200 without a
// Location header (Google's cache sends a "silent redirect" around itself
// when it cannot serve a page) and at most MaxResponseSize bytes of valid
// armor. The broker must be on its scheme's default port, as the cache URL
// cannot name another.
//
// # Transport
//
// NewTransport builds the http.RoundTripper the HTTP method uses: its own
// http.Transport (never http.DefaultTransport), no environment proxies, and
// optionally a uTLS ClientHello that imitates a browser (the utls-imitate
// bridge-line option), with HTTP/2 or HTTP/1.1 chosen by the ALPN result.
package rendezvous
