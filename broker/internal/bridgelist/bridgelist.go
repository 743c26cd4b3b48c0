// Package bridgelist loads the broker's bridge list: which relay (WebSocket
// URL) serves which bridge fingerprint.
//
// # File format
//
// The file is Snowflake's: newline-delimited JSON, one object per line with
// exactly the fields displayName, webSocketAddress and fingerprint (any
// other field is an error). Blank lines are skipped. Any bad line rejects
// the whole file.
//
//	{"displayName":"flurry", "webSocketAddress":"wss://relay.example/", "fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}
//
// The fingerprint is 20 or 32 bytes in hex (either case); the
// webSocketAddress must be a ws:// or wss:// URL with a host. displayName is
// kept but unused.
//
// A list can also be given in memory (FromEntries); each Entry is checked
// as a line of the file is.
package bridgelist

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
)

var (
	// errInvalid means a bridge list line is malformed.
	errInvalid = errors.New("invalid bridge list")
	// ErrTooMany means the list has more than MaxBridges entries.
	ErrTooMany = errors.New("too many bridges")
)

// MaxBridges is the largest number of bridges a list may hold.
const MaxBridges = 64

// maxLine bounds one line of the file.
const maxLine = 64 << 10

// Bridge is one entry of the list.
type Bridge struct {
	DisplayName      string
	WebSocketAddress string // the relay URL handed to proxies
	Host             string // hostname of WebSocketAddress, for relay patterns
	Fingerprint      []byte // 20 or 32 bytes
}

// List is an immutable bridge list, safe for concurrent use.
type List struct {
	bridges []Bridge
	byFP    map[string]int // key: string(fingerprint bytes)
}

// Entry is one bridge as written in the file: one JSON line, or one
// element of a list given in memory.
type Entry struct {
	DisplayName      string `json:"displayName"`
	WebSocketAddress string `json:"webSocketAddress"`
	Fingerprint      string `json:"fingerprint"`
}

// FromEntries builds a list from entries checked as the lines of a file
// are. It must hold at least one bridge.
func FromEntries(entries ...Entry) (*List, error) {
	l := &List{byFP: make(map[string]int)}
	for i, e := range entries {
		b, err := parseEntry(e)
		if err == nil {
			err = l.add(b)
		}
		if err != nil {
			return nil, fmt.Errorf("bridge %d: %w", i+1, err)
		}
	}
	if len(l.bridges) == 0 {
		return nil, fmt.Errorf("%w: no bridges", errInvalid)
	}
	return l, nil
}

// Parse reads a bridge list file.
func Parse(r io.Reader) (*List, error) {
	l := &List{byFP: make(map[string]int)}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	n := 0
	for sc.Scan() {
		n++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var ln Entry
		dec := json.NewDecoder(bytes.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ln); err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", errInvalid, n, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("%w: line %d: more than one JSON object", errInvalid, n)
		}
		b, err := parseEntry(ln)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if err := l.add(b); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalid, err)
	}
	if len(l.bridges) == 0 {
		return nil, fmt.Errorf("%w: no bridges", errInvalid)
	}
	return l, nil
}

func parseEntry(ln Entry) (Bridge, error) {
	fp, err := ParseFingerprint(ln.Fingerprint)
	if err != nil {
		return Bridge{}, err
	}
	u, err := url.Parse(ln.WebSocketAddress)
	if err != nil {
		return Bridge{}, fmt.Errorf("%w: webSocketAddress: %v", errInvalid, err)
	}
	if u.Scheme != "ws" && u.Scheme != "wss" {
		return Bridge{}, fmt.Errorf("%w: webSocketAddress %q: scheme must be ws or wss", errInvalid, ln.WebSocketAddress)
	}
	if u.Hostname() == "" {
		return Bridge{}, fmt.Errorf("%w: webSocketAddress %q has no host", errInvalid, ln.WebSocketAddress)
	}
	return Bridge{
		DisplayName:      ln.DisplayName,
		WebSocketAddress: ln.WebSocketAddress,
		Host:             u.Hostname(),
		Fingerprint:      fp,
	}, nil
}

// ParseFingerprint decodes a hex fingerprint of 20 or 32 bytes.
func ParseFingerprint(s string) ([]byte, error) {
	fp, err := hex.DecodeString(s)
	if err != nil || (len(fp) != 20 && len(fp) != 32) {
		return nil, fmt.Errorf("%w: fingerprint must be 40 or 64 hex digits", errInvalid)
	}
	return fp, nil
}

func (l *List) add(b Bridge) error {
	if len(l.bridges) >= MaxBridges {
		return fmt.Errorf("%w: at most %d", ErrTooMany, MaxBridges)
	}
	key := string(b.Fingerprint)
	if _, dup := l.byFP[key]; dup {
		return fmt.Errorf("%w: duplicate fingerprint %s", errInvalid, strings.ToUpper(hex.EncodeToString(b.Fingerprint)))
	}
	l.byFP[key] = len(l.bridges)
	l.bridges = append(l.bridges, b)
	return nil
}

// Len returns the number of bridges.
func (l *List) Len() int { return len(l.bridges) }

// At returns bridge i, 0 <= i < Len.
func (l *List) At(i int) Bridge { return l.bridges[i] }

// Lookup returns the index of the bridge with fingerprint fp (raw bytes).
func (l *List) Lookup(fp []byte) (int, bool) {
	i, ok := l.byFP[string(fp)]
	return i, ok
}
