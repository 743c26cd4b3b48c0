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
		case keptName(name) != "":
			if req.nKept == maxKeptFields {
				return fastRequest{}, fastOther
			}
			req.kept[req.nKept] = keptField{keptName(name), value[:len(value):len(value)]}
			req.nKept++
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
