package amp

import (
	"bytes"
	"encoding/base64"
	"io"
)

// The AMP boilerplate around the armored data
// (https://amp.dev/boilerplate/): Snowflake's exact bytes.
const (
	boilerplateStart = `<!doctype html>
<html amp>
<head>
<meta charset="utf-8">
<script async src="https://cdn.ampproject.org/v0.js"></script>
<link rel="canonical" href="#">
<meta name="viewport" content="width=device-width">
<style amp-boilerplate>body{-webkit-animation:-amp-start 8s steps(1,end) 0s 1 normal both;-moz-animation:-amp-start 8s steps(1,end) 0s 1 normal both;-ms-animation:-amp-start 8s steps(1,end) 0s 1 normal both;animation:-amp-start 8s steps(1,end) 0s 1 normal both}@-webkit-keyframes -amp-start{from{visibility:hidden}to{visibility:visible}}@-moz-keyframes -amp-start{from{visibility:hidden}to{visibility:visible}}@-ms-keyframes -amp-start{from{visibility:hidden}to{visibility:visible}}@-o-keyframes -amp-start{from{visibility:hidden}to{visibility:visible}}@keyframes -amp-start{from{visibility:hidden}to{visibility:visible}}</style><noscript><style amp-boilerplate>body{-webkit-animation:none;-moz-animation:none;-ms-animation:none;animation:none}</style></noscript>
</head>
<body>
`
	boilerplateEnd = "</body>\n</html>"
)

// Armor layout.
const (
	// MaxElementText is the most text a decoder buffers for one HTML token
	// (and so for one <pre> element's text).
	MaxElementText = 32 * 1024
	// lineLen is the number of armored characters per line.
	lineLen = 32
	// linesPerElement keeps an element's text ("\n" after "<pre>" and
	// after every line) within MaxElementText: (32768−1)/33 = 992.
	linesPerElement = (MaxElementText - 1) / (lineLen + 1)
	// armorVersion is the first armored character.
	armorVersion = '0'
)

var (
	preOpen  = []byte("<pre>\n")
	preClose = []byte("</pre>\n")
	newline  = []byte("\n")
)

// NewArmorEncoder writes the AMP boilerplate head to w and returns a writer
// that armors everything written to it (see the package documentation).
// Close writes the rest (the final base64 quantum, closing tags, the
// boilerplate end); it does not close w.
func NewArmorEncoder(w io.Writer) (io.WriteCloser, error) {
	if _, err := io.WriteString(w, boilerplateStart); err != nil {
		return nil, err
	}
	lines := &lineWriter{w: w}
	if _, err := lines.Write([]byte{armorVersion}); err != nil {
		return nil, err
	}
	return &armorEncoder{w: w, lines: lines, b64: base64.NewEncoder(base64.StdEncoding, lines)}, nil
}

// Armor returns data armored as a complete AMP page.
func Armor(data []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(ArmoredLen(len(data)))
	enc, _ := NewArmorEncoder(&buf) // a bytes.Buffer never fails
	_, _ = enc.Write(data)
	_ = enc.Close()
	return buf.Bytes()
}

// ArmoredLen returns len(Armor(data)) for len(data) = n.
func ArmoredLen(n int) int {
	text := 1 + base64.StdEncoding.EncodedLen(n)
	lines := (text + lineLen - 1) / lineLen
	elements := (lines + linesPerElement - 1) / linesPerElement
	return len(boilerplateStart) + text + lines + elements*(len(preOpen)+len(preClose)) + len(boilerplateEnd)
}

// armorEncoder chains a base64 encoder into a lineWriter into w.
type armorEncoder struct {
	w      io.Writer
	lines  *lineWriter
	b64    io.WriteCloser
	closed bool
}

func (e *armorEncoder) Write(p []byte) (int, error) { return e.b64.Write(p) }

// Close flushes the base64 encoder, closes the open element and writes the
// boilerplate end. Calling it again does nothing.
func (e *armorEncoder) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	if err := e.b64.Close(); err != nil {
		return err
	}
	if err := e.lines.close(); err != nil {
		return err
	}
	_, err := io.WriteString(e.w, boilerplateEnd)
	return err
}

// lineWriter lays text out in lines of lineLen characters, each followed by
// "\n", in <pre> elements of at most linesPerElement lines. The text must
// not contain anything meaningful in HTML (base64 does not).
type lineWriter struct {
	w     io.Writer
	open  bool // inside a <pre> element
	col   int  // characters in the current line
	lines int  // complete lines in the current element
}

func (l *lineWriter) Write(p []byte) (int, error) {
	written := 0
	for len(p) > 0 {
		if !l.open {
			if _, err := l.w.Write(preOpen); err != nil {
				return written, err
			}
			l.open = true
		}
		n := min(lineLen-l.col, len(p))
		if _, err := l.w.Write(p[:n]); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
		l.col += n
		if l.col < lineLen {
			continue
		}
		l.col = 0
		l.lines++
		if _, err := l.w.Write(newline); err != nil {
			return written, err
		}
		if l.lines == linesPerElement {
			l.lines = 0
			l.open = false
			if _, err := l.w.Write(preClose); err != nil {
				return written, err
			}
		}
	}
	return written, nil
}

// close ends the current line and element, if any.
func (l *lineWriter) close() error {
	if !l.open {
		return nil
	}
	if l.col > 0 {
		if _, err := l.w.Write(newline); err != nil {
			return err
		}
	}
	l.open, l.col, l.lines = false, 0, 0
	_, err := l.w.Write(preClose)
	return err
}
