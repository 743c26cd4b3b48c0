package covertdtls

import (
	mrand "math/rand/v2"
	"slices"
	"sync"

	"github.com/pion/dtls/v4/pkg/protocol/extension"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
)

// randomizeTries bounds the draws for a hello a pion DTLS server can
// finish (a draw may keep only cipher suites, signature algorithms or
// SRTP profiles it cannot use).
const randomizeTries = 4096

// alpns are the protocols randomize may offer, covert-dtls v1.5.0's list
// (pkg/utils, ALPNS).
var alpns = []string{"http/1.0", "http/1.1", "h2c", "h2", "h3", "stun.turn", "webrtc", "c-webrtc", "ftp", "pop3", "imap", "mqtt", "smb", "irc", "sip/2"}

// randomized is the ClientHello hook of randomize, covert-dtls's
// randomization done on pion/dtls v4's hello: cipher suites, supported
// groups, signature algorithms and SRTP profiles shuffled and cut to a
// random length, a random ALPN added, the extensions shuffled; redrawn
// until a pion DTLS server with a WebRTC (ECDSA P-256) certificate can
// finish it in DTLS 1.3 and in DTLS 1.2 (a DTLS 1.2-only server, such as
// Snowflake's, answers it in DTLS 1.2). Where pion offers DTLS 1.3 a draw
// keeps it: pion/dtls v4.0.1's client refuses a DTLS 1.2 answer from a
// DTLS 1.3-capable server whatever its hello offered (see installHook).
func (k *helloKey) randomized(ch handshake.MessageClientHello) handshake.Message {
	if prev := k.sent.get(ch.Random); prev != nil {
		return resend(prev, ch)
	}
	pion, err := rawExtensions(ch.Extensions)
	if err != nil {
		return &ch
	}
	rng := k.rng("randomize", ch.Random)
	for range randomizeTries {
		if m := drawHello(rng, ch, pion); m != nil {
			k.sent.put(ch.Random, m)
			return m
		}
	}
	return &ch
}

// maxRemembered bounds the randomized hellos kept for resends: one per
// handshake in progress is enough; older ones are dropped first.
const maxRemembered = 256

// resends remembers the randomized hello of each handshake by its random,
// which a client keeps when it resends its hello (after a
// HelloVerifyRequest in DTLS 1.2, a HelloRetryRequest in DTLS 1.3).
// pion/dtls v4 builds the resent hello from the first one as the hook
// returned it and runs it through the hook again: randomizing it anew
// would change it, which the server refuses (RFC 8446, 4.1.2).
type resends struct {
	mu    sync.Mutex
	sent  map[handshake.Random]*handshake.MessageClientHello // guarded by mu
	order []handshake.Random                                 // oldest first
}

func (r *resends) get(rnd handshake.Random) *handshake.MessageClientHello {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent[rnd]
}

func (r *resends) put(rnd handshake.Random, m *handshake.MessageClientHello) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sent == nil {
		r.sent = map[handshake.Random]*handshake.MessageClientHello{}
	}
	if _, ok := r.sent[rnd]; ok {
		return
	}
	r.sent[rnd] = m
	r.order = append(r.order, rnd)
	if len(r.order) > maxRemembered {
		delete(r.sent, r.order[0])
		r.order = r.order[1:]
	}
}

// resend is prev, the first hello of a handshake, with what the resent
// hello ch may change: the cookie, the key share and the cookie extension.
func resend(prev *handshake.MessageClientHello, ch handshake.MessageClientHello) handshake.Message {
	pion, err := rawExtensions(ch.Extensions)
	if err != nil {
		return &ch
	}
	exts, err := rawExtensions(prev.Extensions)
	if err != nil {
		return &ch
	}
	exts = slices.DeleteFunc(exts, func(e extension.Raw) bool { return e.Type == extension.TypeCookie })
	for i := range exts {
		if exts[i].Type == extension.TypeKeyShare {
			if ks, ok := findRaw(pion, extension.TypeKeyShare); ok {
				exts[i] = ks
			}
		}
	}
	if c, ok := findRaw(pion, extension.TypeCookie); ok {
		exts = append(exts, c)
	}
	m := *prev
	m.Cookie = slices.Clone(ch.Cookie)
	m.Extensions = values(exts)
	return &m
}

// shuffleCut returns s shuffled and, if cut, cut to a random length of at
// least one, as covert-dtls's ShuffleRandomLength.
func shuffleCut[T any](rng *mrand.Rand, s []T, cut bool) []T {
	s = slices.Clone(s)
	rng.Shuffle(len(s), func(i, j int) { s[i], s[j] = s[j], s[i] })
	if cut && len(s) > 0 {
		s = s[:1+rng.IntN(len(s))]
	}
	return s
}

// drawHello draws one randomization of pion's hello; nil if a pion server
// could not finish it.
func drawHello(rng *mrand.Rand, ch handshake.MessageClientHello, pion []extension.Raw) *handshake.MessageClientHello {
	suites := shuffleCut(rng, ch.CipherSuiteIDs, true)
	var groups, sigs []uint16
	exts := make([]extension.Raw, 0, len(pion)+1)
	hasALPN := false
	for _, e := range pion {
		e.Data = slices.Clone(e.Data)
		switch e.Type {
		case extension.TypeSupportedGroups:
			l, _, err := u16List(e.Data, 2)
			if err != nil {
				return nil
			}
			groups = shuffleCut(rng, l, true)
			e.Data = appendU16List(nil, groups, 2)
		case extension.TypeSignatureAlgorithms:
			l, _, err := u16List(e.Data, 2)
			if err != nil {
				return nil
			}
			sigs = shuffleCut(rng, l, true)
			e.Data = appendU16List(nil, sigs, 2)
		case extension.TypeUseSRTP:
			l, rest, err := u16List(e.Data, 2)
			if err != nil {
				return nil
			}
			l = shuffleCut(rng, l, true)
			if !slices.ContainsFunc(l, func(p uint16) bool { return p == 0x0001 || p == 0x0007 || p == 0x0008 }) {
				return nil // pion's WebRTC needs one of srtpProfiles
			}
			e.Data = append(appendU16List(nil, l, 2), rest...)
		case extension.TypeALPN:
			hasALPN = true
		}
		exts = append(exts, e)
	}
	if !hasALPN {
		p := alpns[rng.IntN(len(alpns))]
		body := []byte{0, byte(1 + len(p)), byte(len(p))}
		exts = append(exts, extension.Raw{Type: extension.TypeALPN, Data: append(body, p...)})
	}
	ecdsa := slices.Contains(sigs, 0x0403)
	tls12 := slices.ContainsFunc(suites, func(s uint16) bool {
		switch s {
		case 0xc02b, 0xc02c, 0xc00a, 0xcca9: // ECDHE_ECDSA suites pion implements
			return true
		}
		return false
	}) && slices.ContainsFunc(groups, func(g uint16) bool { return g == 0x001d || g == 0x0017 || g == 0x0018 })
	if !ecdsa || !tls12 {
		return nil
	}
	// DTLS 1.3, if pion offers it and this draw can finish it.
	ks, _ := findRaw(exts, extension.TypeKeyShare)
	share := fitKeyShare(ks.Data, groups)
	// The draw must not depend on pion's key share: after a
	// HelloRetryRequest pion shares another group, and its resent hello
	// must differ from the first only in key_share and cookie (RFC 8446,
	// 4.1.2). pion's first hello shares X25519 (its client default), so
	// a DTLS 1.3 draw keeps X25519.
	tls13 := slices.Contains(groups, 0x001d) && slices.ContainsFunc(suites, func(s uint16) bool { return s>>8 == 0x13 })
	if v, ok := findRaw(exts, extension.TypeSupportedVersions); ok && offersDTLS13(v.Data) && (!tls13 || share == nil) {
		return nil
	}
	exts = slices.DeleteFunc(exts, func(e extension.Raw) bool {
		return !tls13 && (e.Type == extension.TypeKeyShare || e.Type == extension.TypePSKKeyExchangeModes)
	})
	for i := range exts {
		switch exts[i].Type {
		case extension.TypeKeyShare:
			exts[i].Data = share
		case extension.TypeSupportedVersions:
			if !tls13 {
				exts[i].Data = withoutDTLS13(exts[i].Data)
			}
		}
	}
	if !tls13 {
		suites = slices.DeleteFunc(suites, func(s uint16) bool { return s>>8 == 0x13 })
	}
	// The cookie of a HelloRetryRequest stays last, where pion puts it.
	cookie := slices.IndexFunc(exts, func(e extension.Raw) bool { return e.Type == extension.TypeCookie })
	var tail []extension.Raw
	if cookie >= 0 {
		tail = []extension.Raw{exts[cookie]}
		exts = slices.Delete(exts, cookie, cookie+1)
	}
	exts = append(shuffleCut(rng, exts, false), tail...)
	return &handshake.MessageClientHello{
		Version:            ch.Version,
		Random:             ch.Random,
		SessionID:          slices.Clone(ch.SessionID),
		Cookie:             slices.Clone(ch.Cookie),
		CipherSuiteIDs:     suites,
		CompressionMethods: ch.CompressionMethods,
		Extensions:         values(exts),
	}
}
