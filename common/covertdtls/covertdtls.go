// Package covertdtls shapes the DTLS ClientHello a pion peer sends so that
// it is harder to tell apart from a browser's, with Snowflake's
// configuration names (its client's and proxy's -covertdtls-config and
// -covertdtls-fingerprint, and the bridge-line arguments of the same names)
// on top of github.com/theodorsm/covert-dtls.
//
// Modes:
//
//	disable         pion's own ClientHello (the default)
//	mimic           Chromium 156's ClientHello: DTLS 1.3-capable, with fresh
//	                X25519MLKEM768 and X25519 key shares and the extensions
//	                in a new order each handshake, as Chromium sends it
//	randomize       covert-dtls's randomization: cipher suites, extensions,
//	                groups, signature algorithms and SRTP profiles shuffled
//	                and cut, a random ALPN added
//	randomizemimic  replay one of covert-dtls's browser hellos (Chrome and
//	                Firefox, DTLS 1.2), picked per handshake
//
// A Fingerprint (a raw ClientHello body in hex, as covert-dtls and Snowflake
// store them) replaces the replayed hello in every mode but disable.
//
// Snowflake's mimic replays covert-dtls's newest hello, a Firefox's:
// covert-dtls v1.5.0 cannot replay current Chrome's DTLS 1.3 hellos. pion
// speaks DTLS 1.2 only; it answers the DTLS 1.3 offer of mimic with DTLS
// 1.2, as a browser limited to DTLS 1.2 would.
//
// In every mode but disable the DTLS server sends no HelloVerifyRequest,
// as Chromium's does not (ICE has already checked the path both ways).
//
// Only the DTLS client sends a ClientHello. In a Snowflake rendezvous the
// client offers with a=setup:actpass and the proxy answers active, so the
// proxy is the DTLS client: its hello is the one shaped. The client is the
// DTLS server; covert-dtls has no ServerHello shaping, so what it sends is
// pion's in every mode (docs/fingerprinting.md lists what that reveals).
// Apply is called on both sides, as Snowflake does, so whichever peer ends
// up DTLS client sends the shaped hello.
package covertdtls

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/pion/dtls/v3/pkg/protocol/handshake"
	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v4"
	"github.com/theodorsm/covert-dtls/pkg/fingerprints"
	"github.com/theodorsm/covert-dtls/pkg/mimicry"
	"github.com/theodorsm/covert-dtls/pkg/utils"
)

// Mode is a covert DTLS mode; its zero value is Disable.
type Mode int

// The modes, named as Snowflake names them.
const (
	Disable Mode = iota
	Mimic
	Randomize
	RandomizeMimic
)

var modeNames = [...]string{"disable", "mimic", "randomize", "randomizemimic"}

// String returns the mode's name as ParseMode accepts it.
func (m Mode) String() string {
	if m < 0 || int(m) >= len(modeNames) {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return modeNames[m]
}

// ErrMode: a mode name other than disable, mimic, randomize and
// randomizemimic.
var ErrMode = errors.New("covert DTLS mode must be disable, mimic, randomize or randomizemimic")

// ErrFingerprint: a fingerprint that is not a ClientHello body in hex.
var ErrFingerprint = errors.New("covert DTLS fingerprint is not a DTLS ClientHello in hex")

// ParseMode maps a mode name (case-insensitive, as Snowflake) to a Mode.
// The empty string is Disable.
func ParseMode(s string) (Mode, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return Disable, nil
	}
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return Disable, ErrMode
}

// maxFingerprint bounds a fingerprint's length (hex digits): a ClientHello
// fits in one handshake message of a few kilobytes, key shares included.
const maxFingerprint = 16 << 10

// Config is a covert DTLS configuration; the zero value is Disable.
type Config struct {
	Mode Mode
	// Fingerprint, if set, is the ClientHello to replay (hex); it is
	// ignored when Mode is Disable, as Snowflake ignores it.
	Fingerprint string
}

// Parse returns the Config for Snowflake's two settings, checking both.
func Parse(mode, fingerprint string) (Config, error) {
	m, err := ParseMode(mode)
	if err != nil {
		return Config{}, err
	}
	c := Config{Mode: m, Fingerprint: strings.TrimSpace(fingerprint)}
	return c, c.Validate()
}

// Validate checks the mode and, if the mode uses it, the fingerprint.
func (c Config) Validate() error {
	if c.Mode < Disable || c.Mode > RandomizeMimic {
		return ErrMode
	}
	if c.Mode == Disable || c.Fingerprint == "" {
		return nil
	}
	_, err := parseFingerprint(c.Fingerprint)
	return err
}

// parseFingerprint checks a fingerprint by loading it.
func parseFingerprint(fp string) (fingerprints.ClientHelloFingerprint, error) {
	if len(fp) > maxFingerprint {
		return "", fmt.Errorf("%w: longer than %d hex digits", ErrFingerprint, maxFingerprint)
	}
	if _, err := hex.DecodeString(fp); err != nil {
		return "", fmt.Errorf("%w: not hex", ErrFingerprint)
	}
	f := fingerprints.ClientHelloFingerprint(strings.ToLower(fp))
	var m mimicry.MimickedClientHello
	if err := m.LoadFingerprint(f); err != nil {
		return "", fmt.Errorf("%w: %w", ErrFingerprint, err)
	}
	if _, err := m.Marshal(); err != nil {
		return "", fmt.Errorf("%w: %w", ErrFingerprint, err)
	}
	return f, nil
}

// Apply installs the ClientHello hook of c on se and sets se's network to
// n (nil: the host's), which mimic wraps to send its hello in a DTLS 1.0
// record and its ICE checks as Chromium does. Disable only sets n. One
// SettingEngine can serve any number of concurrent peer connections. The
// Shaper (nil unless mimic wraps the network) must learn each remote
// description: see Shaper.TrackRemote.
func (c Config) Apply(se *webrtc.SettingEngine, n transport.Net) (*Shaper, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var sh *Shaper
	if c.shapesNet() {
		if n == nil {
			var err error
			if n, err = stdnet.NewNet(); err != nil {
				return nil, err
			}
		}
		sh = newShaper()
		n = chromiumNet{Net: n, sh: sh}
	}
	if n != nil {
		se.SetNet(n)
	}
	if err := c.installHook(se); err != nil {
		return nil, err
	}
	return sh, nil
}

// installHook installs the ClientHello hook of c (none for Disable).
func (c Config) installHook(se *webrtc.SettingEngine) error {
	if c.Mode == Disable {
		return nil
	}
	se.SetDTLSInsecureSkipHelloVerify(true)
	var pool []fingerprints.ClientHelloFingerprint
	switch {
	case c.Fingerprint != "":
		f, _ := parseFingerprint(c.Fingerprint) // checked by Validate
		pool = []fingerprints.ClientHelloFingerprint{f}
	case c.Mode == Mimic:
		se.SetSRTPProtectionProfiles(utils.DefaultSRTPProtectionProfiles()...)
		se.SetDTLSClientHelloMessageHook(new(resends).hook(chromium))
		return nil
	case c.Mode == RandomizeMimic:
		pool = fingerprints.GetClientHelloFingerprints()
	}
	for _, f := range pool {
		if _, err := parseFingerprint(string(f)); err != nil {
			return err // a covert-dtls hello that does not load
		}
	}
	if pool == nil { // randomize without a fingerprint
		se.SetDTLSClientHelloMessageHook(new(resends).hook(randomized))
		return nil
	}
	// The replayed hellos carry use_srtp with these profiles; pion's
	// server must accept them.
	se.SetSRTPProtectionProfiles(utils.DefaultSRTPProtectionProfiles()...)
	se.SetDTLSClientHelloMessageHook(mimicHook(pool))
	return nil
}

// shapesNet reports whether Apply wraps the network (chromiumNet): mimic
// of Chromium, not a replayed fingerprint.
func (c Config) shapesNet() bool { return c.Mode == Mimic && c.Fingerprint == "" }

// mimicHook replays a fingerprint of pool with ch's random, session id and
// cookie. The fingerprint is chosen by the hello's random, which a DTLS
// client keeps when it resends its hello with a cookie: the second hello of
// a handshake replays the same browser as the first, as a browser's would,
// while different handshakes pick independently.
func mimicHook(pool []fingerprints.ClientHelloFingerprint) func(handshake.MessageClientHello) handshake.Message {
	return func(ch handshake.MessageClientHello) handshake.Message {
		r := ch.Random.MarshalFixed()
		sum := sha256.Sum256(r[:])
		f := pool[binary.BigEndian.Uint64(sum[:])%uint64(len(pool))]
		m := &mimicry.MimickedClientHello{}
		if err := m.LoadFingerprint(f); err != nil {
			return &ch // fingerprints were checked by Apply
		}
		return m.Hook(ch)
	}
}
