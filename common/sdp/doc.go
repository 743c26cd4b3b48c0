// Package sdp reads the few things Flurry needs from WebRTC session
// descriptions: the client's public address (for the relay's client_ip
// parameter), local-address checks (to keep private addresses out of a
// proxy's answer and to refuse relays on private networks), and Flurry's
// own session-level attributes (a=flurry-quick-pair).
//
// It works on the SDP text itself and depends only on the standard library,
// so roles that must not link pion can use it.
//
// The lines it reads (RFC 8866 and RFC 8839):
//
//	c=IN IP4 203.0.113.7
//	a=candidate:<foundation> <component> <transport> <priority> <address> <port> typ <type> [raddr <a> rport <p>] ...
//	         field:    0           1           2           3          4        5     6    7
//
// Lines end with CRLF; a bare LF is accepted. Everything else is ignored.
package sdp
