package webrtcnet

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/pion/ice/v4"
	"github.com/pion/interceptor"
	"github.com/pion/transport/v5"
	"github.com/pion/webrtc/v5"

	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/pionlog"
	"github.com/flurrypt/flurry/common/sockbuf"
)

// Peer is what the SettingEngine of a data-path peer, the client or the
// proxy, is built from. Each role adds its own settings to the result.
type Peer struct {
	// Logger receives pion's logs (common/pionlog); nil discards them.
	Logger *slog.Logger
	// Net is the network under the data path (the client's SOCKS5
	// proxy, a test's); nil means the host's.
	Net transport.Net
	// MaxMessageSize is the largest DataChannel message the peer accepts
	// (SCTP's max message size).
	MaxMessageSize uint32
	// CovertDTLS shapes the DTLS ClientHello (common/covertdtls).
	CovertDTLS covertdtls.Config
	// LoopbackOnly restricts ICE to loopback (see LoopbackOnly).
	LoopbackOnly bool
	// KeepLocalAddresses gathers loopback candidates too.
	KeepLocalAddresses bool
	// WrapNet, if not nil, wraps the data path's network, under covert
	// DTLS (the proxy paces its sends there: common/pacing).
	WrapNet func(transport.Net) transport.Net
}

// dtlsFlightInterval is when a DTLS flight without an answer is first
// sent again; the wait doubles with each resend. DTLS 1.3 (RFC 9147,
// 5.8.2) recommends 100 ms; pion waits 1 s, as DTLS 1.2 did, so a flight
// lost on a lossy path, or sent on a candidate pair the peer did not yet
// use (QuickPair), delayed a connection by a second. On a longer round
// trip the first resends are early and cost a few datagrams.
const dtlsFlightInterval = 100 * time.Millisecond

// SettingEngine builds the settings both peers share: pion's logs through
// Logger, detached DataChannels of at most MaxMessageSize, the SCTP sender
// of DataPath, no mDNS, dtlsFlightInterval, large socket buffers on Net
// (common/sockbuf), the covert DTLS hello, and LoopbackOnly or
// KeepLocalAddresses. It returns the covert DTLS Shaper that must learn
// each offer (covertdtls.Config.Apply).
func (p Peer) SettingEngine() (*webrtc.SettingEngine, *covertdtls.Shaper, error) {
	se := &webrtc.SettingEngine{LoggerFactory: pionlog.New(p.Logger)}
	se.DetachDataChannels()
	se.SetSCTPMaxMessageSize(p.MaxMessageSize)
	DataPath(se)
	se.SetICEMulticastDNSMode(ice.MulticastDNSModeDisabled)
	se.SetDTLSRetransmissionInterval(dtlsFlightInterval)
	// Large kernel buffers on every UDP socket, so that a burst of a
	// download is not dropped while the reader is late (each drop costs
	// SCTP a retransmission timeout of at least one second). It changes
	// how fast bytes move, none of what goes on the wire.
	n, err := sockbuf.Net(p.Net)
	if err != nil {
		return nil, nil, fmt.Errorf("network: %w", err)
	}
	if p.WrapNet != nil {
		n = p.WrapNet(n)
	}
	// Covert DTLS wraps the network when it rewrites records, and sets it.
	shaper, err := p.CovertDTLS.Apply(se, n)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case p.LoopbackOnly:
		LoopbackOnly(se, p.Net)
	case p.KeepLocalAddresses:
		se.SetIncludeLoopbackCandidate(true)
	}
	return se, shaper, nil
}

// NewAPI returns a pion API of se for data channels only: without pion's
// default codecs and RTP interceptors (NACK, reports, congestion control
// feedback), which it would otherwise build for every peer connection and
// a data channel never uses. A peer connection with an API of its own (as
// its QuickPair needs) then allocates about 23 KB in all
// (BenchmarkNewPeerConnection), where one from a shared API with pion's
// defaults allocated about 43 KB (2026-12-02).
func NewAPI(se webrtc.SettingEngine) *webrtc.API {
	return webrtc.NewAPI(webrtc.WithSettingEngine(se), webrtc.WithMediaEngine(&webrtc.MediaEngine{}),
		webrtc.WithInterceptorRegistry(&interceptor.Registry{}))
}
