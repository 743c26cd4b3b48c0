package covertdtls

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	mrand "math/rand/v2"
	"slices"

	"github.com/pion/dtls/v4"
	"github.com/pion/dtls/v4/pkg/protocol"
	"github.com/pion/dtls/v4/pkg/protocol/extension"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
)

// The hooks below rewrite the ClientHello pion/dtls v4 builds. pion keeps
// the key shares (and their private keys) it put in its own hello, and it
// checks the server's answer against the hello the hook returns, so a
// rewritten hello carries pion's key_share (and pion's cookie extension
// after a HelloRetryRequest) unchanged and everything else as the mode
// wants. A hook is a pure function of pion's hello and a secret drawn
// once per Config.Apply: the hello resent in the same handshake (after a
// HelloVerifyRequest in DTLS 1.2 or a HelloRetryRequest in DTLS 1.3, both
// keep the random) makes the same choices, as a browser's resent hello
// does, while the choices of different handshakes are independent and,
// keyed by the secret, cannot be predicted from the public random.
// pion/dtls v4 builds a resent hello from the first one as the hook
// returned it and hooks it again, so a hook must give the same hello for
// its own output (mimic and replay ignore what they replace; randomize
// remembers its draws).

// srtpProfiles are the SRTP profiles the shaped peers accept, in the
// order a pion DTLS server prefers them: the three pion/webrtc maps to an
// SRTP context and browsers offer (pion/webrtc v5 fails the connection
// after a handshake that chose any other), AES128_CM_HMAC_SHA1_80 first
// as Chromium's own list.
var srtpProfiles = []dtls.SRTPProtectionProfile{
	dtls.SRTP_AES128_CM_HMAC_SHA1_80,
	dtls.SRTP_AEAD_AES_128_GCM,
	dtls.SRTP_AEAD_AES_256_GCM,
}

// helloKey keys the per-handshake choices of a hook; randomize also
// remembers its hellos for resends.
type helloKey struct {
	key  [32]byte
	sent resends
}

func newHelloKey() (*helloKey, error) {
	k := new(helloKey)
	if _, err := rand.Read(k.key[:]); err != nil {
		return nil, err
	}
	return k, nil
}

// rng returns the random source of the handshake whose hello has random r.
func (k *helloKey) rng(label string, r handshake.Random) *mrand.Rand {
	m := hmac.New(sha256.New, k.key[:])
	m.Write([]byte(label))
	b := r.MarshalFixed()
	m.Write(b[:])
	var seed [32]byte
	copy(seed[:], m.Sum(nil))
	return mrand.New(mrand.NewChaCha8(seed))
}

// rawExtensions returns exts encoded, in order.
func rawExtensions(exts []extension.Value) ([]extension.Raw, error) {
	out := make([]extension.Raw, 0, len(exts))
	for _, e := range exts {
		d, err := e.MarshalData()
		if err != nil {
			return nil, err
		}
		out = append(out, extension.Raw{Type: e.ExtensionType(), Data: d})
	}
	return out, nil
}

func findRaw(exts []extension.Raw, t extension.Type) (extension.Raw, bool) {
	for _, e := range exts {
		if e.Type == t {
			return e, true
		}
	}
	return extension.Raw{}, false
}

func values(exts []extension.Raw) []extension.Value {
	out := make([]extension.Value, len(exts))
	for i, e := range exts {
		out[i] = e
	}
	return out
}

var errMalformed = errors.New("malformed extension")

// u16List decodes a list of 16-bit values behind a prefix of prefix bytes
// (1 or 2) giving its length in bytes.
func u16List(d []byte, prefix int) ([]uint16, []byte, error) {
	if len(d) < prefix {
		return nil, nil, errMalformed
	}
	n := int(d[0])
	if prefix == 2 {
		n = int(binary.BigEndian.Uint16(d))
	}
	d = d[prefix:]
	if n%2 != 0 || n > len(d) {
		return nil, nil, errMalformed
	}
	out := make([]uint16, n/2)
	for i := range out {
		out[i] = binary.BigEndian.Uint16(d[2*i:])
	}
	return out, d[n:], nil
}

func appendU16List(b []byte, l []uint16, prefix int) []byte {
	if prefix == 1 {
		b = append(b, byte(2*len(l)))
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(2*len(l)))
	}
	for _, v := range l {
		b = binary.BigEndian.AppendUint16(b, v)
	}
	return b
}

// keyShare is one entry of a ClientHello's key_share.
type keyShare struct {
	group uint16
	key   []byte
}

func parseKeyShares(d []byte) ([]keyShare, error) {
	if len(d) < 2 || int(binary.BigEndian.Uint16(d)) != len(d)-2 {
		return nil, errMalformed
	}
	d = d[2:]
	var out []keyShare
	for len(d) > 0 {
		if len(d) < 4 {
			return nil, errMalformed
		}
		g, n := binary.BigEndian.Uint16(d), int(binary.BigEndian.Uint16(d[2:]))
		if len(d) < 4+n {
			return nil, errMalformed
		}
		out = append(out, keyShare{g, d[4 : 4+n]})
		d = d[4+n:]
	}
	return out, nil
}

func encodeKeyShares(s []keyShare) []byte {
	var body []byte
	for _, e := range s {
		body = binary.BigEndian.AppendUint16(body, e.group)
		body = binary.BigEndian.AppendUint16(body, uint16(len(e.key)))
		body = append(body, e.key...)
	}
	return append(binary.BigEndian.AppendUint16(nil, uint16(len(body))), body...)
}

// fitKeyShare returns pion's key shares (the key_share body ks) for the
// groups of the offered list groups, in pion's order; nil if none fits.
// RFC 8446 (4.2.8) lets a client share keys only for groups it offers.
func fitKeyShare(ks []byte, groups []uint16) []byte {
	shares, err := parseKeyShares(ks)
	if err != nil {
		return nil
	}
	shares = slices.DeleteFunc(shares, func(s keyShare) bool { return !slices.Contains(groups, s.group) })
	if len(shares) == 0 {
		return nil
	}
	return encodeKeyShares(shares)
}

// withoutDTLS13 returns the supported_versions body d without DTLS 1.3,
// for a hello that cannot complete a DTLS 1.3 handshake.
func withoutDTLS13(d []byte) []byte {
	v, _, err := u16List(d, 1)
	if err != nil {
		return d
	}
	v = slices.DeleteFunc(v, func(x uint16) bool { return x == uint16(protocol.Version1_3) })
	return appendU16List(nil, v, 1)
}

// offersDTLS13 reports whether a supported_versions body offers DTLS 1.3.
func offersDTLS13(d []byte) bool {
	v, _, err := u16List(d, 1)
	return err == nil && slices.Contains(v, uint16(protocol.Version1_3))
}
