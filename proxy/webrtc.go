package proxy

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/pacing"
	"github.com/flurrypt/flurry/common/webrtcnet"
)

// newSettingEngine builds the pion settings every peer connection of the
// proxy is made with, its sockets paced by pacers, and the covert DTLS
// Shaper that must learn each client's offer.
func newSettingEngine(s *settings, pacers *pacing.Registry) (*webrtc.SettingEngine, *covertdtls.Shaper, error) {
	// No IP filter on the production path: pion binds its STUN (srflx)
	// sockets only to the addresses an IP filter keeps, and rewrites only
	// the host candidates it keeps, so filtering out private addresses
	// would leave a proxy behind a NAT with no srflx candidate and make
	// -outbound-address useless on a 1:1 NAT host. Local candidates are
	// removed from the answer by localDescription instead.
	se, shaper, err := webrtcnet.Peer{
		Logger:             s.Logger,
		MaxMessageSize:     uint32(s.MaxMessageSize),
		CovertDTLS:         s.CovertDTLS,
		LoopbackOnly:       s.LoopbackOnly,
		KeepLocalAddresses: s.KeepLocalAddresses,
		WrapNet:            pacers.Net,
	}.SettingEngine()
	if err != nil {
		return nil, nil, err
	}
	// No HelloVerifyRequest when the proxy is the DTLS server (as
	// Snowflake: it saves a round trip).
	se.SetDTLSInsecureSkipHelloVerify(true)
	// The proxy's send window (sendwindow.go) paces downloads; SCTP's
	// Reno window, held at least this open, no longer halves the rate on
	// each random loss.
	se.SetSCTPMinCwnd(sctpMinCwnd)
	if s.PortMin != 0 {
		if err := se.SetEphemeralUDPPortRange(s.PortMin, s.PortMax); err != nil {
			return nil, nil, fmt.Errorf("%w: port range: %w", ErrInvalidConfig, err)
		}
	}
	if s.outbound.IsValid() {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External:        []string{s.outbound.String()},
			AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode:            webrtc.ICEAddressRewriteReplace,
		})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: outbound address: %w", ErrInvalidConfig, err)
		}
	}
	if s.ConfigureSettingEngine != nil {
		s.ConfigureSettingEngine(se)
	}
	return se, shaper, nil
}

// newPeerConnection makes a peer connection with the proxy's settings, and
// with quick (if not nil) selecting its candidate pair: each connection gets
// an API of its own, as a QuickPair serves one connection.
func (p *Proxy) newPeerConnection(quick *webrtcnet.QuickPair) (*webrtc.PeerConnection, error) {
	se := p.se
	if quick != nil {
		quick.Install(&se)
	}
	pc, err := webrtcnet.NewAPI(se).NewPeerConnection(p.iceConfig())
	if err != nil {
		return nil, err
	}
	if quick != nil {
		quick.Watch(pc)
	}
	return pc, nil
}

// pacerFor registers a Pacer for the client's end of pc's selected
// candidate pair; nil if there is none yet. The caller closes it.
func (p *Proxy) pacerFor(pc *webrtc.PeerConnection) *pacing.Pacer {
	pair, err := pc.SCTP().Transport().ICETransport().GetSelectedCandidatePair()
	if err != nil || pair == nil || pair.Remote == nil {
		return nil
	}
	addr, err := netip.ParseAddr(pair.Remote.Address)
	if err != nil {
		return nil
	}
	return p.pacing.Pace(netip.AddrPortFrom(addr, pair.Remote.Port))
}

func (p *Proxy) iceConfig() webrtc.Configuration {
	var c webrtc.Configuration
	if len(p.s.STUNURLs) > 0 {
		c.ICEServers = []webrtc.ICEServer{{URLs: p.s.STUNURLs}}
	}
	return c
}

// localDescription creates the offer or answer (typ) and returns the SDP
// to send once ICE gathering completes or timeout passes, with local
// candidates stripped unless they are to be kept.
func (p *Proxy) localDescription(ctx context.Context, pc *webrtc.PeerConnection, typ webrtc.SDPType, timeout time.Duration) (string, error) {
	stripLocal := !p.s.KeepLocalAddresses && !p.s.LoopbackOnly
	local, err := webrtcnet.LocalDescription(ctx, pc, typ, timeout, stripLocal)
	switch {
	case errors.Is(err, webrtcnet.ErrNoLocalDescription):
		return "", errPeerConnectionFailed
	case err != nil:
		return "", err
	case !local.AnyCandidate:
		return "", errNoCandidates
	case !strings.Contains(local.SDP, "a=candidate:"):
		// Brokers (Snowflake's and ours) refuse an answer without a
		// candidate, so one whose candidates were all local is not sent.
		return "", ErrNoPublicCandidate
	}
	return local.SDP, nil
}
