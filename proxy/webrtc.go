package proxy

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/webrtc/v4"

	"github.com/flurrypt/flurry/common/pionlog"
	"github.com/flurrypt/flurry/common/sdp"
)

// newWebRTCAPI builds the pion API every peer connection of the proxy uses.
func newWebRTCAPI(s *settings) (*webrtc.API, error) {
	var se webrtc.SettingEngine
	se.DetachDataChannels()
	se.LoggerFactory = pionlog.New(s.Logger)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	dataNet, err := dataPathNet()
	if err != nil {
		return nil, err
	}
	if err := configureDTLS(&se, s.CovertDTLS, dataNet); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	se.SetSCTPMaxMessageSize(uint32(s.MaxMessageSize))
	if s.PortMin != 0 {
		if err := se.SetEphemeralUDPPortRange(s.PortMin, s.PortMax); err != nil {
			return nil, fmt.Errorf("%w: port range: %w", ErrInvalidConfig, err)
		}
	}
	// No IP filter on the production path: pion binds its STUN (srflx)
	// sockets only to the addresses an IP filter keeps, and rewrites only
	// the host candidates it keeps, so filtering out private addresses
	// would leave a proxy behind a NAT with no srflx candidate and make
	// -outbound-address useless on a 1:1 NAT host. Local candidates are
	// removed from the answer by localDescription instead.
	switch {
	case s.LoopbackOnly:
		LoopbackOnly(&se)
	case s.KeepLocalAddresses:
		se.SetIncludeLoopbackCandidate(true)
	}
	if s.outbound.IsValid() {
		err := se.SetICEAddressRewriteRules(webrtc.ICEAddressRewriteRule{
			External:        []string{s.outbound.String()},
			AsCandidateType: webrtc.ICECandidateTypeHost,
			Mode:            webrtc.ICEAddressRewriteReplace,
		})
		if err != nil {
			return nil, fmt.Errorf("%w: outbound address: %w", ErrInvalidConfig, err)
		}
	}
	if s.ConfigureSettingEngine != nil {
		s.ConfigureSettingEngine(&se)
	}
	return webrtc.NewAPI(webrtc.WithSettingEngine(se)), nil
}

// LoopbackOnly restricts a SettingEngine to loopback interfaces and
// addresses, includes loopback candidates and turns mDNS off: WebRTC between
// peers of one test process, never leaving the machine.
func LoopbackOnly(se *webrtc.SettingEngine) {
	se.SetInterfaceFilter(func(name string) bool {
		ifi, err := net.InterfaceByName(name)
		return err == nil && ifi.Flags&net.FlagLoopback != 0
	})
	se.SetIPFilter(func(ip net.IP) bool { return ip.IsLoopback() })
	se.SetIncludeLoopbackCandidate(true)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetNetworkTypes([]webrtc.NetworkType{webrtc.NetworkTypeUDP4})
}

func (p *Proxy) iceConfig() webrtc.Configuration {
	var c webrtc.Configuration
	if len(p.s.STUNURLs) > 0 {
		c.ICEServers = []webrtc.ICEServer{{URLs: p.s.STUNURLs}}
	}
	return c
}

// localDescription sets desc as the local description, waits until ICE
// gathering completes or timeout passes, and returns the SDP to send, with
// local candidates stripped unless they are to be kept.
func (p *Proxy) localDescription(ctx context.Context, pc *webrtc.PeerConnection, desc webrtc.SessionDescription, timeout time.Duration) (string, error) {
	gathered := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(desc); err != nil {
		return "", err
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-gathered:
	case <-t.C: // send what we have (non-trickle), as Snowflake does
	case <-ctx.Done():
		return "", ctx.Err()
	}
	local := pc.LocalDescription()
	if local == nil {
		return "", errPeerConnectionFailed
	}
	if !strings.Contains(local.SDP, "a=candidate:") {
		return "", errNoCandidates
	}
	if p.s.KeepLocalAddresses || p.s.LoopbackOnly {
		return local.SDP, nil
	}
	answer := sdp.StripLocalCandidates(local.SDP)
	// Brokers (Snowflake's and ours) refuse an answer without a
	// candidate, so one whose candidates were all local is not sent.
	if !strings.Contains(answer, "a=candidate:") {
		return "", ErrNoPublicCandidate
	}
	return answer, nil
}
