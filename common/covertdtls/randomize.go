package covertdtls

import (
	"sync"

	"github.com/pion/dtls/v3/pkg/crypto/hash"
	"github.com/pion/dtls/v3/pkg/crypto/signature"
	"github.com/pion/dtls/v3/pkg/protocol/extension"
	"github.com/pion/dtls/v3/pkg/protocol/handshake"
	"github.com/theodorsm/covert-dtls/pkg/randomize"
)

// randomizeTries bounds the draws for a hello a pion DTLS server can
// finish (covert-dtls may keep only cipher suites, signature algorithms or
// SRTP profiles it cannot use).
const randomizeTries = 64

// maxRemembered bounds the randomized hellos kept for resends: one per
// handshake in progress is enough; older ones are dropped first.
const maxRemembered = 256

// resends remembers the hello sent in each handshake, by its random,
// which a DTLS client keeps when it resends its hello with the server's
// cookie after a HelloVerifyRequest: the resent hello then differs from
// the first only in the cookie, as RFC 6347 (4.2.1) requires and a
// browser's does. pion's DTLS server refuses a resent hello whose cipher
// suites changed.
type resends struct {
	mu    sync.Mutex
	sent  map[handshake.Random]func(cookie []byte) handshake.Message
	order []handshake.Random // oldest first
}

// hook returns the ClientHello hook that sends make(ch)'s hello, or ch
// itself where make returns nil.
func (r *resends) hook(make func(ch handshake.MessageClientHello) func(cookie []byte) handshake.Message) func(handshake.MessageClientHello) handshake.Message {
	return func(ch handshake.MessageClientHello) handshake.Message {
		r.mu.Lock()
		prev, ok := r.sent[ch.Random]
		r.mu.Unlock()
		if ok {
			return prev(ch.Cookie)
		}
		m := make(ch)
		if m == nil {
			return &ch
		}
		r.mu.Lock()
		if r.sent == nil {
			r.sent = map[handshake.Random]func([]byte) handshake.Message{}
		}
		if _, ok := r.sent[ch.Random]; !ok {
			r.sent[ch.Random] = m
			r.order = append(r.order, ch.Random)
			if len(r.order) > maxRemembered {
				delete(r.sent, r.order[0])
				r.order = r.order[1:]
			}
		}
		r.mu.Unlock()
		return m(ch.Cookie)
	}
}

// randomized randomizes a ClientHello with covert-dtls (cipher suites,
// extensions, groups, signature algorithms and SRTP profiles shuffled and
// cut, a random ALPN added), redrawing what a pion DTLS server with a
// WebRTC (ECDSA) certificate could not complete; nil if covert-dtls cannot
// parse the hello.
func randomized(ch handshake.MessageClientHello) func(cookie []byte) handshake.Message {
	for range randomizeTries {
		m := &randomize.RandomizedMessageClientHello{RandomALPN: true}
		if _, isRandomized := m.Hook(ch).(*randomize.RandomizedMessageClientHello); !isRandomized {
			return nil
		}
		if usable(m) {
			return func(cookie []byte) handshake.Message {
				c := *m
				c.Cookie = append([]byte(nil), cookie...)
				return &c
			}
		}
	}
	return nil
}

// chromium is Chromium's hello for ch.
func chromium(ch handshake.MessageClientHello) func(cookie []byte) handshake.Message {
	h, err := newChromiumHello(ch)
	if err != nil {
		return nil
	}
	return func(cookie []byte) handshake.Message {
		c := *h
		c.cookie = append([]byte(nil), cookie...)
		return &c
	}
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
