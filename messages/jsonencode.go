package messages

import (
	"strconv"
	"unicode/utf8"
)

// Hand-written encoders for the two responses the broker sends on every
// match (ProxyPollResponse with the offer, ClientPollResponse with the
// answer). They write exactly the bytes json.Marshal writes for these
// structs (FuzzEncodeDifferential checks it) without its reflection and
// intermediate buffer.

// htmlSafeByte[c] reports whether json.Marshal writes ASCII byte c as is in a
// string: printable or DEL, except the quote, backslash and < > & (which it
// escapes for HTML). Never modified.
var htmlSafeByte = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const lowerHex = "0123456789abcdef"

// appendJSONString appends s as json.Marshal writes a string (HTML-escaped,
// U+2028 and U+2029 escaped, each invalid UTF-8 byte as the replacement
// character U+FFFD, unescaped: Go 1.27's encoding/json, built on
// encoding/json/v2, writes it so; Go 1.26's wrote the escape \ufffd, which
// decodes to the same string).
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafeByte[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', lowerHex[c>>4], lowerHex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			dst = append(dst, s[start:i]...)
			dst = utf8.AppendRune(dst, utf8.RuneError)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', lowerHex[r&0xf])
		default:
			i += n
			continue
		}
		i += n
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// encodedSize is a capacity for a message holding strings of total length n:
// room for the keys and some escapes, so that the buffer rarely grows.
func encodedSize(n int) int {
	return n + n/8 + 96
}

// appendMarshal appends r to b as json.Marshal writes it. r's fields must
// be valid.
func (r ProxyPollResponse) appendMarshal(b []byte) []byte {
	b = append(b, `{"Status":`...)
	b = appendJSONString(b, r.Status)
	b = append(b, `,"Offer":`...)
	b = appendJSONString(b, r.Offer)
	b = append(b, `,"NAT":`...)
	b = appendJSONString(b, r.NAT)
	b = append(b, `,"NextPoll":`...)
	b = strconv.AppendInt(b, r.NextPoll, 10)
	b = append(b, `,"RelayURL":`...)
	b = appendJSONString(b, r.RelayURL)
	return append(b, '}')
}

// appendMarshal appends r to b as json.Marshal writes it (both keys
// omitempty).
func (r ClientPollResponse) appendMarshal(b []byte) []byte {
	b = append(b, '{')
	if r.Answer != "" {
		b = append(b, `"answer":`...)
		b = appendJSONString(b, r.Answer)
	}
	if r.Error != "" {
		if r.Answer != "" {
			b = append(b, ',')
		}
		b = append(b, `"error":`...)
		b = appendJSONString(b, r.Error)
	}
	return append(b, '}')
}
