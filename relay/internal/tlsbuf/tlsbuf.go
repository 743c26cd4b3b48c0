// Package tlsbuf gives back the input buffers that a crypto/tls.Conn keeps
// for its whole life once they have grown: the buffer of raw records
// (grown to hold the ClientHello and every larger record since) and the
// buffer of handshake messages. An idle TLS connection holds about 3.5 KiB
// in them, empty, and crypto/tls has no API to drop them; Release does it
// through the fields' offsets, found by reflection when the package is
// initialized. If this Go's crypto/tls is laid out differently, Release
// does nothing and reports false (and this package's tests fail).
package tlsbuf

import (
	"bytes"
	"crypto/tls"
	"reflect"
	"sync"
	"unsafe"
)

// keepRawInput is the largest raw-record buffer Release keeps: small
// records (a keep-alive, a ping) fit in the 576 bytes crypto/tls grows it
// to for them, so that a connection woken by them now and then does not
// allocate it again each time; what a ClientHello or a burst of data grew
// goes.
const keepRawInput = 1024

// layout is where a tls.Conn keeps what Release touches.
type layout struct {
	in       uintptr // halfConn "in": its embedded sync.Mutex guards the rest
	rawInput uintptr // bytes.Buffer: raw records read ahead
	input    uintptr // bytes.Reader: plaintext not yet read, inside rawInput
	hand     uintptr // bytes.Buffer: handshake messages not yet read
	ok       bool
}

var conn = findLayout()

func findLayout() layout {
	t := reflect.TypeFor[tls.Conn]()
	offset := func(name string, want reflect.Type) (uintptr, bool) {
		f, ok := t.FieldByName(name)
		return f.Offset, ok && len(f.Index) == 1 && f.Type == want
	}
	var l layout
	var okIn, okRaw, okInput, okHand bool
	if f, ok := t.FieldByName("in"); ok && len(f.Index) == 1 && f.Type.Kind() == reflect.Struct {
		// The mutex must be the half-connection's first field.
		m, found := f.Type.FieldByName("Mutex")
		okIn = found && m.Anonymous && m.Offset == 0 && m.Type == reflect.TypeFor[sync.Mutex]()
		l.in = f.Offset
	}
	l.rawInput, okRaw = offset("rawInput", reflect.TypeFor[bytes.Buffer]())
	l.input, okInput = offset("input", reflect.TypeFor[bytes.Reader]())
	l.hand, okHand = offset("hand", reflect.TypeFor[bytes.Buffer]())
	l.ok = okIn && okRaw && okInput && okHand
	return l
}

// Release drops c's input buffers if they are empty (nothing read ahead,
// no plaintext or handshake message waiting) and, for the raw-record
// buffer, larger than keepRawInput; the next read that needs one allocates
// it again. Call it between reads, when c is about to idle. It
// reports false if this Go's crypto/tls is not laid out as expected.
func Release(c *tls.Conn) bool {
	if !conn.ok {
		return false
	}
	p := unsafe.Pointer(c)
	mu := (*sync.Mutex)(unsafe.Add(p, conn.in))
	rawInput := (*bytes.Buffer)(unsafe.Add(p, conn.rawInput))
	input := (*bytes.Reader)(unsafe.Add(p, conn.input))
	hand := (*bytes.Buffer)(unsafe.Add(p, conn.hand))
	mu.Lock()
	defer mu.Unlock()
	if input.Len() == 0 {
		// input points into rawInput's array: let both go.
		*input = bytes.Reader{}
		if rawInput.Len() == 0 && rawInput.Cap() > keepRawInput {
			*rawInput = bytes.Buffer{}
		}
	}
	if hand.Len() == 0 {
		*hand = bytes.Buffer{}
	}
	return true
}
