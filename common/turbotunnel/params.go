package turbotunnel

import (
	"time"

	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"
)

// The KCP and smux parameters of a turbotunnel session, as Snowflake v2.14.1
// sets them in client/lib/snowflake.go and server/lib/snowflake.go. Both ends
// of a session must agree on them (a Flurry client may meet a Snowflake
// relay and the other way round), so they are defined here once and every
// user calls ConfigureKCP and ClientSmuxConfig or RelaySmuxConfig.
const (
	// MTU is the largest KCP packet, in bytes: kcp-go's default
	// (IKCP_MTU_DEF), which Snowflake never changes. The relays (Snowflake's
	// and Flurry's) size their packet buffers by it and truncate longer
	// packets, so a client must not send larger ones.
	MTU = 1400

	// Window is KCP's send and receive window, in packets. Snowflake raised
	// it from kcp-go's 32 to the largest value so that the window never
	// limits throughput on a long path (Snowflake issue 40026).
	Window = 65535

	// SmuxVersion is the smux protocol version: version 2 has per-stream
	// flow control, which keeps one slow stream from stalling the others.
	// The relay's first-packet check (relay/kcpcheck.go) expects it too.
	SmuxVersion = 2

	// StreamBuffer is smux's per-stream receive buffer (MaxStreamBuffer),
	// 1 MiB, Snowflake's StreamSize: it bounds a stream's bytes in flight
	// and so its throughput on a long round trip.
	StreamBuffer = 1 << 20

	// ClientStreamBuffer is the client's MaxStreamBuffer: the window a
	// relay, Snowflake's too, may have in flight towards one of the
	// client's streams. The receiver sends its window again each time it
	// has read half of it, so a window of W keeps W/2 to W in flight:
	// Snowflake's 1 MiB holds a download near 4 MB/s at a 150 ms round
	// trip, whatever the path carries. 3 MiB leaves the client's SCTP
	// receive window (webrtcpeer) as the bound there. A relay holds more
	// per download only while the path is slower than the relay (Flurry's
	// relay bounds what it holds by its own send window,
	// relay/sendwindow.go), and sends each half-window update's worth at
	// once (OutgoingQueueSize). Only the receiver's setting: nothing the
	// relay must agree to.
	ClientStreamBuffer = 3 << 20

	// KeepAliveInterval is how often smux sends a keep-alive (smux's
	// default, which Snowflake keeps): an idle session still carries a
	// packet every 10 s, which the relay's idle checks rely on.
	KeepAliveInterval = 10 * time.Second

	// ClientKeepAliveTimeout is how long a client's smux session lives
	// without hearing from the relay: long, so that the session outlives
	// the minutes a client may need to find new proxies after its proxies
	// die.
	ClientKeepAliveTimeout = 10 * time.Minute

	// RelayKeepAliveTimeout is how long the relay keeps a smux session
	// without hearing from the client: shorter than the client's, so that
	// the relay frees the state of clients that are gone.
	RelayKeepAliveTimeout = 4 * time.Minute
)

// ConfigureKCP applies Snowflake's KCP parameters to s, on either end.
func ConfigureKCP(s *kcp.UDPSession) {
	// Stream mode coalesces the payloads of consecutive writes into full
	// packets. kcp-go marks it deprecated but keeps it, and Snowflake sets it.
	//lint:ignore SA1019 stream mode is part of Snowflake's KCP parameters
	s.SetStreamMode(true)
	s.SetWindowSize(Window, Window)
	// No delay off, the default interval, no fast resend, and no congestion
	// window: only the static windows limit the sender.
	s.SetNoDelay(0, 0, 0, 1)
	s.SetMtu(MTU)
}

// ClientSmuxConfig is the smux configuration of a client (smux.Client).
func ClientSmuxConfig() *smux.Config {
	c := smuxConfig(ClientKeepAliveTimeout)
	c.MaxStreamBuffer = ClientStreamBuffer
	return c
}

// RelaySmuxConfig is the smux configuration of the relay (smux.Server).
func RelaySmuxConfig() *smux.Config {
	return smuxConfig(RelayKeepAliveTimeout)
}

func smuxConfig(keepAliveTimeout time.Duration) *smux.Config {
	c := smux.DefaultConfig()
	c.Version = SmuxVersion
	c.KeepAliveInterval = KeepAliveInterval
	c.KeepAliveTimeout = keepAliveTimeout
	c.MaxStreamBuffer = StreamBuffer
	return c
}
