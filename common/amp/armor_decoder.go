package amp

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"golang.org/x/net/html"
)

// NewArmorDecoder reads the armor version from r and returns a reader of the
// armored data (see the package documentation for the rules). Errors in the
// armor are reported as ErrArmor or ErrArmorVersion, by NewArmorDecoder or
// later by Read; errors of r are passed on. The decoder buffers at most one
// HTML token (MaxElementText bytes) and starts no goroutine.
func NewArmorDecoder(r io.Reader) (io.Reader, error) {
	t := newTextReader(r)
	var v [1]byte
	for {
		n, err := t.Read(v[:])
		if n == 1 {
			break
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: no text in <pre> elements", ErrArmor)
		}
		if err != nil {
			return nil, err
		}
	}
	if v[0] != armorVersion {
		return nil, fmt.Errorf("%w %q", ErrArmorVersion, v[0])
	}
	return &armorDecoder{b64: base64.NewDecoder(base64.StdEncoding, t)}, nil
}

// armorDecoder decodes the base64 text and labels its errors.
type armorDecoder struct {
	b64 io.Reader
}

func (d *armorDecoder) Read(p []byte) (int, error) {
	n, err := d.b64.Read(p)
	if err == nil || err == io.EOF || errors.Is(err, ErrArmor) {
		return n, err
	}
	var corrupt base64.CorruptInputError
	if errors.As(err, &corrupt) || errors.Is(err, io.ErrUnexpectedEOF) {
		err = fmt.Errorf("%w: bad base64: %w", ErrArmor, err)
	}
	return n, err
}

// textReader reads the text inside the <pre> elements of an HTML document,
// without ASCII whitespace.
type textReader struct {
	z      *html.Tokenizer
	inPre  bool
	padded bool   // a '=' has been read: only more '=' may follow
	text   []byte // unread text of the current token (the tokenizer's buffer)
	err    error  // sticky
}

func newTextReader(r io.Reader) *textReader {
	z := html.NewTokenizer(r)
	// Without a limit the tokenizer buffers text that no tag breaks up
	// without bound.
	z.SetMaxBuf(MaxElementText)
	return &textReader{z: z}
}

// isASCIISpace reports whether c is ASCII whitespace as HTML defines it
// (https://infra.spec.whatwg.org/#ascii-whitespace).
func isASCIISpace(c byte) bool {
	return c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func (t *textReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if len(t.text) == 0 {
			if n > 0 || t.err != nil {
				break
			}
			t.next()
			continue
		}
		i := 0
		for ; i < len(t.text) && n < len(p); i++ {
			c := t.text[i]
			if isASCIISpace(c) {
				continue
			}
			if c == '=' {
				t.padded = true
			} else if t.padded {
				// The base64 decoder would take it for a new quantum
				// when it comes in a later Read.
				t.err = fmt.Errorf("%w: data after base64 padding", ErrArmor)
				break
			}
			p[n] = c
			n++
		}
		t.text = t.text[i:]
		if t.err != nil {
			t.text = nil
		}
	}
	if n > 0 {
		return n, nil
	}
	return 0, t.err
}

// next reads one token, setting t.text to its text if it is text inside a
// <pre> element, or t.err at the end of the document or on an error.
func (t *textReader) next() {
	switch t.z.Next() {
	case html.ErrorToken:
		err := t.z.Err()
		switch {
		case err == io.EOF && t.inPre:
			t.err = fmt.Errorf("%w: missing </pre>", ErrArmor)
		case err == io.EOF:
			t.err = io.EOF
		case errors.Is(err, html.ErrBufferExceeded):
			t.err = fmt.Errorf("%w: HTML token longer than %d bytes", ErrArmor, MaxElementText)
		default:
			t.err = err
		}
	case html.TextToken:
		if t.inPre {
			t.text = t.z.Text()
		}
	case html.StartTagToken:
		if name, _ := t.z.TagName(); string(name) == "pre" {
			if t.inPre {
				t.err = fmt.Errorf("%w: nested <pre>", ErrArmor)
				return
			}
			t.inPre = true
		}
	case html.EndTagToken:
		if name, _ := t.z.TagName(); string(name) == "pre" {
			if !t.inPre {
				t.err = fmt.Errorf("%w: unexpected </pre>", ErrArmor)
				return
			}
			t.inPre = false
		}
	}
}
