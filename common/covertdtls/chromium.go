package covertdtls

import (
	"crypto/ecdh"
	"crypto/mlkem"
	"crypto/rand"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"

	"github.com/pion/dtls/v3/pkg/protocol/handshake"
)

// The ClientHello of Debian's Chromium 156 (as the comparison test in
// client/internal/webrtcpeer captures it from the browser on the machine):
// DTLS 1.3-capable, X25519MLKEM768 and X25519 key shares, extensions in a
// new random order each handshake (Chromium's BoringSSL permutes them).
var (
	chromiumCipherSuites = []uint16{
		0x1301, 0x1302, 0x1303, 0xc02b, 0xc02f, 0xcca9, 0xcca8,
		0xc009, 0xc013, 0xc00a, 0xc014, 0x009c, 0x002f, 0x0035,
	}
	// Extension bodies, key_share aside (fresh keys each handshake).
	chromiumExtensions = []struct {
		typ  uint16
		body []byte
	}{
		{0x002d, []byte{0x01, 0x01}}, // psk_key_exchange_modes: psk_dhe_ke
		{0x000e, []byte{0x00, 0x06, 0x00, 0x01, 0x00, 0x08, 0x00, 0x07, 0x00}}, // use_srtp: AES128_CM_SHA1_80, AEAD_AES_256_GCM, AEAD_AES_128_GCM
		{0x0017, nil}, // extended_master_secret
		{0x000d, []byte{0x00, 0x12, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01, 0x05, 0x03, 0x08, 0x05, 0x05, 0x01, 0x08, 0x06, 0x06, 0x01, 0x02, 0x01}}, // signature_algorithms
		{0x002b, []byte{0x04, 0xfe, 0xfc, 0xfe, 0xfd}},                               // supported_versions: DTLS 1.3, 1.2
		{0x000a, []byte{0x00, 0x08, 0x11, 0xec, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18}}, // supported_groups
		{0xff01, []byte{0x00}},       // renegotiation_info
		{0x000b, []byte{0x01, 0x00}}, // ec_point_formats: uncompressed
		{keyShareType, nil},
	}
)

const (
	keyShareType         = 0x0033
	groupX25519MLKEM768  = 0x11ec
	groupX25519          = 0x001d
	chromiumRecordMaxLen = 1 << 14
)

// chromiumHello is one handshake's Chromium ClientHello. Its extension
// order and key shares are drawn once, so the hello resent with a cookie
// differs from the first only in the cookie, as a browser's does.
type chromiumHello struct {
	random    [handshake.RandomLength]byte
	sessionID []byte
	cookie    []byte
	exts      []byte // the extensions block, length included
}

func newChromiumHello(ch handshake.MessageClientHello) (*chromiumHello, error) {
	mk, err := mlkem.GenerateKey768()
	if err != nil {
		return nil, err
	}
	xk, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	hybrid := append(mk.EncapsulationKey().Bytes(), xk.PublicKey().Bytes()...)
	x2, err := ecdh.X25519().GenerateKey(rand.Reader) // the X25519-only share
	if err != nil {
		return nil, err
	}
	var shares []byte
	shares = appendShare(shares, groupX25519MLKEM768, hybrid)
	shares = appendShare(shares, groupX25519, x2.PublicKey().Bytes())
	keyShare := binary.BigEndian.AppendUint16(nil, uint16(len(shares)))
	keyShare = append(keyShare, shares...)

	order := mrand.Perm(len(chromiumExtensions))
	var exts []byte
	for _, i := range order {
		e := chromiumExtensions[i]
		body := e.body
		if e.typ == keyShareType {
			body = keyShare
		}
		exts = binary.BigEndian.AppendUint16(exts, e.typ)
		exts = binary.BigEndian.AppendUint16(exts, uint16(len(body)))
		exts = append(exts, body...)
	}
	h := &chromiumHello{
		random:    ch.Random.MarshalFixed(),
		sessionID: append([]byte(nil), ch.SessionID...),
		cookie:    append([]byte(nil), ch.Cookie...),
		exts:      binary.BigEndian.AppendUint16(nil, uint16(len(exts))),
	}
	h.exts = append(h.exts, exts...)
	return h, nil
}

func appendShare(b []byte, group uint16, key []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, group)
	b = binary.BigEndian.AppendUint16(b, uint16(len(key)))
	return append(b, key...)
}

// Type is ClientHello.
func (h *chromiumHello) Type() handshake.Type { return handshake.TypeClientHello }

// Marshal encodes the hello body.
func (h *chromiumHello) Marshal() ([]byte, error) {
	if len(h.sessionID) > 32 || len(h.cookie) > 255 {
		return nil, errors.New("covertdtls: session id or cookie too long")
	}
	b := []byte{0xfe, 0xfd} // DTLS 1.2, as Chromium's legacy_version
	b = append(b, h.random[:]...)
	b = append(b, byte(len(h.sessionID)))
	b = append(b, h.sessionID...)
	b = append(b, byte(len(h.cookie)))
	b = append(b, h.cookie...)
	b = binary.BigEndian.AppendUint16(b, uint16(2*len(chromiumCipherSuites)))
	for _, c := range chromiumCipherSuites {
		b = binary.BigEndian.AppendUint16(b, c)
	}
	b = append(b, 1, 0) // compression: null
	b = append(b, h.exts...)
	if len(b) > chromiumRecordMaxLen {
		return nil, errors.New("covertdtls: hello too long")
	}
	return b, nil
}

// Unmarshal is not needed: the hello is only sent.
func (h *chromiumHello) Unmarshal([]byte) error {
	return errors.New("covertdtls: a replayed hello is not parsed")
}
