package covertdtls

import (
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/pion/dtls/v4/pkg/protocol/extension"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
)

// recorded is a browser's ClientHello as recorded: a fingerprint in
// covert-dtls's and Snowflake's format (the hello's body in hex) parsed.
type recorded struct {
	hello handshake.MessageClientHello // extensions as extension.Raw
	exts  []extension.Raw
}

// parseRecorded parses a fingerprint (hex, lower or upper case).
func parseRecorded(fp string) (*recorded, error) {
	if len(fp) > maxFingerprint {
		return nil, fmt.Errorf("%w: longer than %d hex digits", ErrFingerprint, maxFingerprint)
	}
	b, err := hex.DecodeString(strings.TrimSpace(fp))
	if err != nil {
		return nil, fmt.Errorf("%w: not hex", ErrFingerprint)
	}
	var h handshake.MessageClientHello
	if err := h.Unmarshal(b); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFingerprint, err)
	}
	// The extensions as recorded, bytes and order: the offset of the
	// extension block follows from the fields Unmarshal checked.
	off := 34 + 1 + len(h.SessionID) + 1 + len(h.Cookie) + 2 + 2*len(h.CipherSuiteIDs) + 1 + len(h.CompressionMethods)
	exts, err := extension.ParseList(b[off:])
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFingerprint, err)
	}
	return &recorded{hello: h, exts: exts}, nil
}

// dtls13 reports whether the recorded hello can carry a DTLS 1.3
// handshake of pion's: it offers DTLS 1.3, a TLS 1.3 cipher suite and a
// group pion shares a key for (X25519MLKEM768 or X25519, chromiumCurves).
func (r *recorded) dtls13() bool {
	v, ok := findRaw(r.exts, extension.TypeSupportedVersions)
	if !ok || !offersDTLS13(v.Data) {
		return false
	}
	g, _ := findRaw(r.exts, extension.TypeSupportedGroups)
	groups, _, _ := u16List(g.Data, 2)
	return slices.ContainsFunc(groups, func(g uint16) bool { return g == 0x11ec || g == 0x001d }) &&
		slices.ContainsFunc(r.hello.CipherSuiteIDs, func(s uint16) bool { return s>>8 == 0x13 })
}

// replay returns the recorded hello with pion's random, session id and
// cookie and pion's key shares for the groups it offers; a recorded
// DTLS 1.3 hello whose groups pion has no share for offers DTLS 1.2 only.
func (r *recorded) replay(ch handshake.MessageClientHello) handshake.Message {
	pion, err := rawExtensions(ch.Extensions)
	if err != nil {
		return &ch
	}
	var groups []uint16
	if g, ok := findRaw(r.exts, extension.TypeSupportedGroups); ok {
		groups, _, _ = u16List(g.Data, 2)
	}
	ks, _ := findRaw(pion, extension.TypeKeyShare)
	share := fitKeyShare(ks.Data, groups)
	exts := make([]extension.Raw, 0, len(r.exts)+1)
	for _, e := range r.exts {
		e.Data = slices.Clone(e.Data)
		switch e.Type {
		case extension.TypeKeyShare:
			if share == nil {
				continue
			}
			e.Data = share
		case extension.TypeSupportedVersions:
			if share == nil {
				e.Data = withoutDTLS13(e.Data)
			}
		case extension.TypeCookie:
			continue // pion's, below
		}
		exts = append(exts, e)
	}
	if c, ok := findRaw(pion, extension.TypeCookie); ok {
		exts = append(exts, c)
	}
	return &handshake.MessageClientHello{
		Version:            r.hello.Version,
		Random:             ch.Random,
		SessionID:          slices.Clone(ch.SessionID),
		Cookie:             slices.Clone(ch.Cookie),
		CipherSuiteIDs:     slices.Clone(r.hello.CipherSuiteIDs),
		CompressionMethods: r.hello.CompressionMethods,
		Extensions:         values(exts),
	}
}

// replayHook replays one hello of pool per handshake, picked by the
// handshake's keyed random source: a resent hello replays the same
// browser as the first, different handshakes pick independently.
func (k *helloKey) replayHook(pool []*recorded) func(handshake.MessageClientHello) handshake.Message {
	return func(ch handshake.MessageClientHello) handshake.Message {
		return pool[k.rng("replay", ch.Random).IntN(len(pool))].replay(ch)
	}
}
