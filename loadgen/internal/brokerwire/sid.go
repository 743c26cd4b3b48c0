package brokerwire

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/messages"
)

// SidLength is the length of a Snowflake proxy's session IDs.
const SidLength = 22

// FillSid writes a fresh session ID into dst, like Snowflake's proxy: 16
// random bytes, standard base64 without padding.
func FillSid(dst *[SidLength]byte) {
	var b [16]byte
	for i := 0; i < len(b); i += 8 {
		v := rand.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	base64.RawStdEncoding.Encode(dst[:], b[:])
}

// SidTemplate is an encoded request whose Sid is replaced in place before
// each use, so that a new poll costs no encoding. One goroutine owns it.
type SidTemplate struct {
	body []byte
	off  int // of the Sid's first byte
}

// NewSidTemplate encodes a request with a placeholder Sid and finds it.
func NewSidTemplate(encode func(sid string) ([]byte, error)) (SidTemplate, error) {
	placeholder := strings.Repeat("A", SidLength)
	b, err := encode(placeholder)
	if err != nil {
		return SidTemplate{}, err
	}
	key := []byte(`"Sid":"` + placeholder + `"`)
	i := bytes.Index(b, key)
	if i < 0 || bytes.Count(b, key) != 1 {
		return SidTemplate{}, fmt.Errorf("%w: cannot find the Sid in %q", measure.ErrInvalidConfig, b)
	}
	return SidTemplate{body: b, off: i + len(`"Sid":"`)}, nil
}

// With returns the template carrying sid.
func (t SidTemplate) With(sid *[SidLength]byte) []byte {
	copy(t.body[t.off:], sid[:])
	return t.body
}

// AnswerTemplate returns the template of a proxy's answer.
func AnswerTemplate() (SidTemplate, error) {
	return NewSidTemplate(func(sid string) ([]byte, error) {
		return messages.ProxyAnswerRequest{Sid: sid, Answer: FixedAnswer}.Encode()
	})
}
