package covertdtls

import (
	"slices"

	"github.com/pion/dtls/v4/pkg/crypto/elliptic"
	"github.com/pion/dtls/v4/pkg/protocol"
	"github.com/pion/dtls/v4/pkg/protocol/extension"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
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
	// Extension bodies; key_share's is pion's (its keys are the ones
	// pion holds the private halves of).
	chromiumExtensions = []extension.Raw{
		{Type: extension.TypePSKKeyExchangeModes, Data: []byte{0x01, 0x01}},                               // psk_dhe_ke
		{Type: extension.TypeUseSRTP, Data: []byte{0x00, 0x06, 0x00, 0x01, 0x00, 0x08, 0x00, 0x07, 0x00}}, // AES128_CM_SHA1_80, AEAD_AES_256_GCM, AEAD_AES_128_GCM
		{Type: extension.TypeExtendedMasterSecret},                                                        //
		{Type: extension.TypeSignatureAlgorithms, Data: []byte{0x00, 0x12, 0x04, 0x03, 0x08, 0x04, 0x04, 0x01, 0x05, 0x03, 0x08, 0x05, 0x05, 0x01, 0x08, 0x06, 0x06, 0x01, 0x02, 0x01}},
		{Type: extension.TypeSupportedVersions, Data: []byte{0x04, 0xfe, 0xfc, 0xfe, 0xfd}},                             // DTLS 1.3, 1.2
		{Type: extension.TypeSupportedGroups, Data: []byte{0x00, 0x08, 0x11, 0xec, 0x00, 0x1d, 0x00, 0x17, 0x00, 0x18}}, // X25519MLKEM768, X25519, P-256, P-384
		{Type: extension.TypeRenegotiationInfo, Data: []byte{0x00}},
		{Type: extension.TypeSupportedPointFormats, Data: []byte{0x01, 0x00}}, // uncompressed
		{Type: extension.TypeKeyShare},
	}
	// chromiumCurves makes pion's hello carry Chromium's two key shares
	// (pion shares X25519 next to X25519MLKEM768 when it leads) and its
	// DTLS 1.3 server prefer the hybrid group as Chromium's does.
	chromiumCurves = []elliptic.Curve{elliptic.X25519MLKEM768, elliptic.X25519, elliptic.P256, elliptic.P384}
	// chromiumGroups are the groups of chromiumExtensions's supported_groups.
	chromiumGroups = []uint16{0x11ec, 0x001d, 0x0017, 0x0018}
)

// chromium returns the ClientHello hook of mimic: Chromium's hello around
// pion's key shares, cookie and random.
func (k *helloKey) chromium(ch handshake.MessageClientHello) handshake.Message {
	pion, err := rawExtensions(ch.Extensions)
	if err != nil {
		return &ch
	}
	ks, _ := findRaw(pion, extension.TypeKeyShare)
	share := fitKeyShare(ks.Data, chromiumGroups)
	rng := k.rng("chromium", ch.Random)
	exts := make([]extension.Raw, 0, len(chromiumExtensions)+1)
	for _, i := range rng.Perm(len(chromiumExtensions)) {
		e := chromiumExtensions[i]
		switch {
		case e.Type == extension.TypeKeyShare:
			if share == nil {
				continue // pion offers no DTLS 1.3: neither do we
			}
			e.Data = share
		case e.Type == extension.TypeSupportedVersions && share == nil:
			e.Data = withoutDTLS13(e.Data)
		}
		e.Data = slices.Clone(e.Data)
		exts = append(exts, e)
	}
	// After a HelloRetryRequest pion echoes the server's cookie; the
	// handshake needs it.
	if c, ok := findRaw(pion, extension.TypeCookie); ok {
		exts = append(exts, c)
	}
	return &handshake.MessageClientHello{
		Version:            protocol.Version1_2, // Chromium's legacy_version
		Random:             ch.Random,
		SessionID:          slices.Clone(ch.SessionID),
		Cookie:             slices.Clone(ch.Cookie),
		CipherSuiteIDs:     slices.Clone(chromiumCipherSuites),
		CompressionMethods: ch.CompressionMethods,
		Extensions:         values(exts),
	}
}

// chromiumServerHello is the ServerHello hook of mimic: a DTLS 1.3
// ServerHello carries key_share then supported_versions, as Chromium's;
// pion's DTLS 1.2 ServerHello is left as it is.
func chromiumServerHello(sh handshake.MessageServerHello) handshake.Message {
	rank := func(e extension.Value) int {
		switch e.ExtensionType() {
		case extension.TypeKeyShare:
			return 0
		case extension.TypeSupportedVersions:
			return 1
		}
		return 2
	}
	sh.Extensions = slices.Clone(sh.Extensions)
	slices.SortStableFunc(sh.Extensions, func(a, b extension.Value) int { return rank(a) - rank(b) })
	return &sh
}
