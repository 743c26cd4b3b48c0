package broker

import (
	"bytes"

	"github.com/flurrypt/flurry/messages"
)

// The fast path's request reader (see fastpath.go): a strict HTTP/1.1
// parser for the one request shape Snowflake's proxies and clients send to
// the rendezvous endpoints. It accepts only what it can answer exactly as
// net/http would; anything else, however valid, goes to net/http, which
// answers it (or refuses it) as before.

// Limits of a request head the fast path reads; a longer head, or more
// header lines, goes to net/http (whose own limits then apply).
const (
	maxFastHead    = 4 << 10
	maxFastHeaders = 32
)

// fastParse is the result of parseFastHead.
type fastParse uint8

const (
	fastIncomplete fastParse = iota // the head has not fully arrived
	fastOK                          // a request the fast path serves
	fastOther                       // for net/http
)

// fastRequest is a request head the fast path accepted.
type fastRequest struct {
	endpoint int    // index in fastPaths
	natType  []byte // Snowflake-NAT-Type's value, nil if absent
	headLen  int    // bytes up to and including the blank line
	bodyLen  int    // Content-Length
}

// fastPaths are the endpoints the fast path serves, by fastRequest.endpoint.
var fastPaths = [...]string{"/proxy", "/client", "/answer"}

// fastIgnored are the header fields (lower case) the broker's rendezvous
// handlers never read: the fast path accepts them and drops their values.
// Any field not here and not handled by name goes to net/http.
var fastIgnored = [...]string{
	"user-agent", "accept", "accept-encoding", "accept-language", "content-type",
	"origin", "referer", "x-session-id", "cache-control", "pragma",
}

// parseFastHead parses the request head at the start of buf.
func parseFastHead(buf []byte) (fastRequest, fastParse) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		if len(buf) >= maxFastHead {
			return fastRequest{}, fastOther
		}
		// A head that cannot be one the fast path takes is handed over
		// as soon as its first bytes say so.
		if !bytes.HasPrefix(buf, []byte("POST /")[:min(len(buf), 6)]) {
			return fastRequest{}, fastOther
		}
		return fastRequest{}, fastIncomplete
	}
	if end+4 > maxFastHead {
		return fastRequest{}, fastOther
	}
	req := fastRequest{endpoint: -1, bodyLen: -1, headLen: end + 4}
	head := buf[:end+2] // every line with its CRLF
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	path, ok := bytes.CutPrefix(line, []byte("POST "))
	if !ok {
		return fastRequest{}, fastOther
	}
	path, ok = bytes.CutSuffix(path, []byte(" HTTP/1.1"))
	if !ok {
		return fastRequest{}, fastOther
	}
	for i, p := range fastPaths {
		if string(path) == p {
			req.endpoint = i
		}
	}
	if req.endpoint < 0 {
		return fastRequest{}, fastOther
	}
	host := false
	for n := 0; len(rest) > 0; n++ {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || n == maxFastHeaders || !isToken(name) || !isFieldValue(value) {
			return fastRequest{}, fastOther
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "host"):
			if host || !isSimpleHost(value) {
				return fastRequest{}, fastOther
			}
			host = true
		case asciiEqualFold(name, "content-length"):
			if req.bodyLen >= 0 {
				return fastRequest{}, fastOther
			}
			if req.bodyLen = parseLength(value); req.bodyLen < 0 {
				return fastRequest{}, fastOther
			}
		case asciiEqualFold(name, "snowflake-nat-type"):
			if req.natType != nil {
				return fastRequest{}, fastOther
			}
			req.natType = value[:len(value):len(value)]
		case asciiEqualFold(name, "connection"):
			if !asciiEqualFold(value, "keep-alive") {
				return fastRequest{}, fastOther
			}
		default:
			if !ignoredField(name) {
				return fastRequest{}, fastOther
			}
		}
	}
	if !host || req.bodyLen < 0 {
		return fastRequest{}, fastOther
	}
	return req, fastOK
}

// parseLength parses a Content-Length the fast path takes: 1 to 6 digits,
// at most messages.MaxBodySize; -1 otherwise.
func parseLength(v []byte) int {
	if len(v) == 0 || len(v) > 6 {
		return -1
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	if n > messages.MaxBodySize {
		return -1
	}
	return n
}

func ignoredField(name []byte) bool {
	for _, f := range fastIgnored {
		if asciiEqualFold(name, f) {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether b equals lower, a lower-case ASCII
// string, ignoring ASCII case.
func asciiEqualFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return true
}

// isFieldValue reports whether b holds only visible ASCII, spaces and tabs
// (no obsolete line folding, no control or non-ASCII bytes).
func isFieldValue(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// isSimpleHost reports whether a Host value is a plain host name or
// address with an optional port: letters, digits, '.', '-', ':', '[', ']'.
func isSimpleHost(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}
