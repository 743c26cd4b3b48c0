// Package covertdtls shapes the DTLS hellos a pion peer sends so that
// they are harder to tell apart from a browser's, with Snowflake's
// configuration names (its client's and proxy's -covertdtls-config and
// -covertdtls-fingerprint, and the bridge-line arguments of the same names),
// through pion/dtls v4's ClientHello and ServerHello hooks. It keeps
// covert-dtls's recorded hellos (github.com/theodorsm/covert-dtls
// pkg/fingerprints, data only) and does the rest itself: covert-dtls's
// other packages are built on pion/dtls v3.
//
// Modes:
//
//	disable         pion's own hellos (the default): DTLS 1.3-capable
//	mimic           Chromium 156's ClientHello: DTLS 1.3-capable, with
//	                X25519MLKEM768 and X25519 key shares and the extensions
//	                in a new order each handshake, as Chromium sends it; as
//	                DTLS server, a DTLS 1.3 ServerHello shaped as Chromium's
//	                and no HelloVerifyRequest
//	randomize       covert-dtls's randomization on pion's hello: cipher
//	                suites, groups, signature algorithms and SRTP profiles
//	                shuffled and cut, a random ALPN added, extensions
//	                shuffled; DTLS 1.3-capable
//	randomizemimic  replay one of covert-dtls's recorded DTLS 1.3 browser
//	                hellos (Chrome 139-143, Firefox 127-136), picked per
//	                handshake, with pion's key shares
//
// A Fingerprint (a raw ClientHello body in hex, as covert-dtls and Snowflake
// store them) replaces the replayed hello in every mode but disable; a
// DTLS 1.2 one holds the peer to DTLS 1.2 (installHook says why).
//
// Every hello keeps a DTLS 1.2 offer a pion DTLS 1.2 server can finish:
// Snowflake v2.14.1's peers (pion/dtls v3) speak DTLS 1.2 only and answer
// every mode in DTLS 1.2; two Flurry peers agree on DTLS 1.3.
//
// In every mode but disable the DTLS server sends no HelloVerifyRequest,
// as Chromium's does not (ICE has already checked the path both ways).
//
// Only the DTLS client sends a ClientHello. In a Snowflake rendezvous the
// client offers with a=setup:actpass and the proxy answers active, so the
// proxy is the DTLS client: its hello is the one shaped. The client is the
// DTLS server; with mimic its DTLS 1.3 ServerHello is ordered as
// Chromium's. Apply is called on both sides, as Snowflake does, so
// whichever peer ends up DTLS client sends the shaped hello.
package covertdtls

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pion/dtls/v4/pkg/protocol"
	"github.com/pion/dtls/v4/pkg/protocol/handshake"
	"github.com/pion/transport/v5"
	"github.com/pion/transport/v5/stdnet"
	"github.com/pion/webrtc/v5"
	"github.com/theodorsm/covert-dtls/pkg/fingerprints"
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

// parseFingerprint checks a fingerprint by loading it and replaying it.
func parseFingerprint(fp string) (*recorded, error) {
	r, err := parseRecorded(fp)
	if err != nil {
		return nil, err
	}
	if _, err := r.replay(handshake.MessageClientHello{}).(*handshake.MessageClientHello).Marshal(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFingerprint, err)
	}
	return r, nil
}

// Apply installs the hello hooks of c on se and sets se's network to n
// (nil: the host's), which mimic wraps to send its hello in a DTLS 1.0
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

// installHook installs the hello hooks of c (none for Disable).
func (c Config) installHook(se *webrtc.SettingEngine) error {
	if c.Mode == Disable {
		return nil
	}
	se.SetDTLSInsecureSkipHelloVerify(true)
	// The shaped hellos carry use_srtp with browsers' profiles; pion's
	// server must accept them.
	se.SetSRTPProtectionProfiles(srtpProfiles...)
	k, err := newHelloKey()
	if err != nil {
		return err
	}
	var fps []fingerprints.ClientHelloFingerprint
	var pool []*recorded
	switch {
	case c.Fingerprint != "":
		fps = []fingerprints.ClientHelloFingerprint{fingerprints.ClientHelloFingerprint(c.Fingerprint)}
	case c.Mode == Mimic:
		se.SetDTLSEllipticCurves(chromiumCurves...)
		se.SetDTLSClientHelloMessageHook(k.chromium)
		se.SetDTLSServerHelloMessageHook(chromiumServerHello)
		return nil
	case c.Mode == Randomize:
		se.SetDTLSClientHelloMessageHook(k.randomized)
		return nil
	case c.Mode == RandomizeMimic:
		pool = replayPool()
	}
	for _, f := range fps {
		r, err := parseFingerprint(string(f))
		if err != nil {
			return err // checked by Validate
		}
		pool = append(pool, r)
	}
	// Recorded DTLS 1.3 hellos offer X25519MLKEM768 or X25519 first.
	se.SetDTLSEllipticCurves(chromiumCurves...)
	for _, r := range pool {
		if !r.dtls13() {
			// A DTLS 1.2 hello: pion/dtls v4.0.1's client checks the
			// downgrade sentinel of RFC 8446 (4.1.3) against its
			// configured maximum, not against the hello it sent, so a
			// DTLS 1.3-capable client whose hello offers DTLS 1.2 only
			// refuses the DTLS 1.2 answer of any DTLS 1.3-capable server
			// (pion/dtls v4's, so Flurry's). This peer speaks DTLS 1.2.
			se.SetDTLSMaxVersion(protocol.Version1_2)
			break
		}
	}
	se.SetDTLSClientHelloMessageHook(k.replayHook(pool))
	return nil
}

// replayPool is randomizemimic's pool: covert-dtls v1.5.0's recorded
// DTLS 1.3 hellos (Chrome 139 to 143, Firefox 127 to 136) that load. Its
// Chrome 144 to 147 hellos are cut after the first fragment (their
// X25519MLKEM768 key share makes them longer than a datagram) and do not
// load; its DTLS 1.2 hellos (Chrome up to 138, Firefox up to 126) would
// hold this peer to DTLS 1.2 (see installHook) and are left to
// -covertdtls-fingerprint.
func replayPool() []*recorded {
	var pool []*recorded
	for _, f := range fingerprints.GetDTLS13ClientHelloFingerprints() {
		if r, err := parseFingerprint(string(f)); err == nil && r.dtls13() {
			pool = append(pool, r)
		}
	}
	return pool
}

// shapesNet reports whether Apply wraps the network (chromiumNet): mimic
// of Chromium, not a replayed fingerprint.
func (c Config) shapesNet() bool { return c.Mode == Mimic && c.Fingerprint == "" }
