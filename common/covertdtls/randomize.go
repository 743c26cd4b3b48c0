package covertdtls

import (
	"sync"

	"github.com/pion/dtls/v3/pkg/crypto/hash"
	"github.com/pion/dtls/v3/pkg/crypto/signature"
	"github.com/pion/dtls/v3/pkg/protocol/extension"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
	"github.com/theodorsm/covert-dtls/pkg/randomize"
)

// randomizeTries bounds the draws for a hello a pion server can finish.
const randomizeTries = 64

// maxRemembered bounds the randomized hellos kept for resends: one per
// handshake in progress is enough; older ones are dropped first.
const maxRemembered = 256

// randomizer randomizes ClientHellos with covert-dtls, with two fixes that
// keep handshakes working against pion's DTLS server (every Flurry and
// Snowflake peer):
//
//   - A client resends its hello with the server's cookie after a
//     HelloVerifyRequest, and pion's server refuses a resent hello whose
//     cipher suites differ from the first (RFC 6347, 4.2.1). So the
//     randomized hello is remembered by its random (which the resend keeps)
//     and resent with only the cookie changed.
//   - covert-dtls may keep only cipher suites, signature algorithms or SRTP
//     profiles that the other side cannot use with a WebRTC ECDSA
//     certificate; such draws are redrawn.
type randomizer struct {
	mu    sync.Mutex
	sent  map[handshake.Random]*randomize.RandomizedMessageClientHello
	order []handshake.Random // oldest first
}

func newRandomizer() *randomizer {
	return &randomizer{sent: make(map[handshake.Random]*randomize.RandomizedMessageClientHello)}
}

func (r *randomizer) hook(ch handshake.MessageClientHello) handshake.Message {
	r.mu.Lock()
	prev, ok := r.sent[ch.Random]
	r.mu.Unlock()
	if ok {
		m := *prev
		m.Cookie = append([]byte(nil), ch.Cookie...)
		return &m
	}
	var m *randomize.RandomizedMessageClientHello
	for range randomizeTries {
		m = &randomize.RandomizedMessageClientHello{RandomALPN: true}
		if _, isRandomized := m.Hook(ch).(*randomize.RandomizedMessageClientHello); !isRandomized {
			return &ch // covert-dtls could not parse pion's hello
		}
		if usable(m) {
			break
		}
	}
	if !usable(m) {
		return &ch
	}
	r.mu.Lock()
	if _, ok := r.sent[ch.Random]; !ok {
		r.sent[ch.Random] = m
		r.order = append(r.order, ch.Random)
		if len(r.order) > maxRemembered {
			delete(r.sent, r.order[0])
			r.order = r.order[1:]
		}
	}
	r.mu.Unlock()
	return m
}

// usable reports whether a pion DTLS server with a WebRTC (ECDSA P-256)
// certificate can complete a handshake with m.
func usable(m *randomize.RandomizedMessageClientHello) bool {
	suite := false
	for _, id := range m.CipherSuiteIDs {
		switch id {
		case 0xc02b, 0xc02c, 0xc00a, 0xcca9: // ECDHE_ECDSA suites pion implements
			suite = true
		}
	}
	if !suite {
		return false
	}
	for _, e := range m.Extensions {
		switch e := e.(type) {
		case *extension.SupportedSignatureAlgorithms:
			ok := false
			for _, a := range e.SignatureHashAlgorithms {
				ok = ok || a.Signature == signature.ECDSA && a.Hash == hash.SHA256
			}
			if !ok {
				return false
			}
		case *extension.UseSRTP:
			ok := false
			for _, p := range e.ProtectionProfiles {
				ok = ok || p == extension.SRTP_AES128_CM_HMAC_SHA1_80 || p == extension.SRTP_AEAD_AES_128_GCM
			}
			if !ok {
				return false
			}
		}
	}
	return true
}
