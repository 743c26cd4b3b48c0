package broker

import (
	"bytes"
	"strings"

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
	endpoint int // index in fastPaths
	headLen  int // bytes up to and including the blank line
	bodyLen  int // Content-Length
	// kept are the fields the handlers read, in their order, as net/http
	// would put them in the request's header.
	kept  [maxKeptFields]keptField
	nKept int
}

// keptField is a header field the handlers read: its canonical name (one
// of keptNames) and its value, pointing into the request head.
type keptField struct {
	name  string
	value []byte
}

// keptNames are the header fields the handlers read, canonical: the NAT
// type of a legacy client, and the forwarding fields of a trusted load
// balancer (see clientaddr). maxKeptFields bounds how many lines of them
// a request the fast path takes may carry.
var keptNames = [...]string{"Snowflake-Nat-Type", "X-Forwarded-For", "Forwarded"}

const maxKeptFields = 4

// fastPaths are the endpoints the fast path serves, by fastRequest.endpoint.
var fastPaths = [...]string{"/proxy", "/client", "/answer"}

// fastIgnored are the header fields (lower case) the broker's rendezvous
// handlers never read: the fast path accepts them and drops their values.
// Any field not here and not handled by name goes to net/http.
var fastIgnored = [...]string{
	"user-agent", "accept", "accept-encoding", "accept-language", "content-type",
	"origin", "referer", "x-session-id", "cache-control", "pragma",
}

// parseFastHead parses the request head at the start of buf. A head
// still arriving is handed over (fastOther) as soon as a complete line of
// it is not one the fast path takes, so that a request net/http would
// answer, or refuse, before its end is never left waiting here.
//
// Lines end in CRLF. net/http also takes a bare LF as a line's end: a
// head with one (before its blank line) goes to net/http, which reads it
// as a request or refuses it as it would anyway.
func parseFastHead(buf []byte) (fastRequest, fastParse) {
	end := bytes.Index(buf, []byte("\r\n\r\n"))
	if end < 0 {
		if len(buf) >= maxFastHead || hasBareLF(buf) {
			return fastRequest{}, fastOther
		}
		last := bytes.LastIndex(buf, []byte("\r\n"))
		if last < 0 {
			// The request line so far: the fast path takes only POSTs.
			if !bytes.HasPrefix(buf, []byte("POST /")[:min(len(buf), 6)]) {
				return fastRequest{}, fastOther
			}
			return fastRequest{}, fastIncomplete
		}
		if _, ok := parseFastLines(buf[:last+2], false); !ok {
			return fastRequest{}, fastOther
		}
		return fastRequest{}, fastIncomplete
	}
	if end+4 > maxFastHead || hasBareLF(buf[:end+4]) {
		return fastRequest{}, fastOther
	}
	req, ok := parseFastLines(buf[:end+2], true) // every line with its CRLF
	if !ok {
		return fastRequest{}, fastOther
	}
	req.headLen = end + 4
	return req, fastOK
}

// parseFastLines parses the request line and header lines of head, each
// ending in CRLF, and reports whether the fast path takes them: if
// complete (head is all of the head, but its blank line), as a request.
func parseFastLines(head []byte, complete bool) (fastRequest, bool) {
	req := fastRequest{endpoint: -1, bodyLen: -1}
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	path, ok := bytes.CutPrefix(line, []byte("POST "))
	if !ok {
		return fastRequest{}, false
	}
	path, ok = bytes.CutSuffix(path, []byte(" HTTP/1.1"))
	if !ok {
		return fastRequest{}, false
	}
	for i, p := range fastPaths {
		if string(path) == p {
			req.endpoint = i
		}
	}
	if req.endpoint < 0 {
		return fastRequest{}, false
	}
	host := false
	for n := 0; len(rest) > 0; n++ {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok || n == maxFastHeaders || !isToken(name) || !isFieldValue(value) {
			return fastRequest{}, false
		}
		value = bytes.Trim(value, " \t")
		switch {
		case asciiEqualFold(name, "host"):
			if host || !isSimpleHost(value) {
				return fastRequest{}, false
			}
			host = true
		case asciiEqualFold(name, "content-length"):
			if req.bodyLen >= 0 {
				return fastRequest{}, false
			}
			if req.bodyLen = parseLength(value); req.bodyLen < 0 {
				return fastRequest{}, false
			}
		case keptName(name) != "":
			if req.nKept == maxKeptFields {
				return fastRequest{}, false
			}
			req.kept[req.nKept] = keptField{keptName(name), value[:len(value):len(value)]}
			req.nKept++
		case asciiEqualFold(name, "connection"):
			if !asciiEqualFold(value, "keep-alive") {
				return fastRequest{}, false
			}
		default:
			if !ignoredField(name) {
				return fastRequest{}, false
			}
		}
	}
	if complete && (!host || req.bodyLen < 0) {
		return fastRequest{}, false
	}
	return req, true
}

// hasBareLF reports whether b holds a line feed that does not follow a
// carriage return.
func hasBareLF(b []byte) bool {
	for i := 0; ; {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return false
		}
		if i+j == 0 || b[i+j-1] != '\r' {
			return true
		}
		i += j + 1
	}
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

// keptName returns the canonical name of a field in keptNames, or "".
func keptName(name []byte) string {
	for _, k := range keptNames {
		if asciiEqualFold(name, k) {
			return k
		}
	}
	return ""
}

func ignoredField(name []byte) bool {
	for _, f := range fastIgnored {
		if asciiEqualFold(name, f) {
			return true
		}
	}
	return false
}

// asciiEqualFold reports whether b equals s, ignoring ASCII case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i, c := range b {
		if lowerASCII(c) != lowerASCII(s[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// isToken reports whether b is a non-empty RFC 9110 token.
func isToken(b []byte) bool { return alnumOr(b, "!#$%&'*+-.^_`|~") }

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
func isSimpleHost(b []byte) bool { return alnumOr(b, ".-:[]") }

// alnumOr reports whether b is not empty and holds only ASCII letters,
// digits and bytes of extra.
func alnumOr(b []byte, extra string) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte(extra, c) >= 0:
		default:
			return false
		}
	}
	return true
}
