// Package proxy is a Flurry proxy: a volunteer that lets censored clients
// reach a relay (a Snowflake bridge). It is wire-compatible with Tor
// Snowflake v2.14.1, so it can serve Snowflake clients through a Snowflake
// broker and relay, and Flurry clients through a Flurry broker and relay.
//
// # What a proxy does
//
//	        (1) POST /proxy  ProxyPollRequest, long-poll ≤10 s
//	proxy ─────────────────────────────────────────────────▶ broker
//	      ◀──────── ProxyPollResponse "client match" + offer ┘
//	      (2) answer the client's WebRTC offer (pion), gather ICE
//	      (3) POST /answer ProxyAnswerRequest ──────────────▶ broker ─▶ client
//	      (4) client ══ WebRTC DataChannel ══▶ proxy
//	      (5) proxy ── WebSocket (wss://relay/?client_ip=…) ──▶ relay
//	      (6) copy bytes both ways until either side closes or goes idle
//
// The proxy never parses the relayed bytes (turbotunnel token, ClientID,
// encapsulated KCP packets: see common/turbotunnel and common/encapsulation).
//
// # Poll loop
//
// Each poll first takes a client slot (at most Config.Capacity at once; 0 is
// unlimited). The slot is held from the match to the end of the session and
// released on every path. A poll carries a fresh Sid, protocol version 1.3,
// the proxy type, the current NAT type, the number of clients rounded down to
// a multiple of 8, and the AcceptedRelayPattern. The proxy then waits as long
// as the broker's NextPoll says (clamped to [MinPollInterval,
// MaxPollInterval]), or only MinPollInterval after a client match, since
// more clients may be waiting; it also obeys the NextPoll of an "incorrect relay
// pattern" reply, one hour with Snowflake's broker, which Snowflake's own
// proxy ignores. Transport errors, non-200 statuses and undecodable replies
// back off exponentially with jitter, from PollInterval up to BackoffMax.
//
// # Relays
//
// A relay URL, whether the default (Config.RelayURL) or named by the broker,
// must be wss:// (ws:// only with AllowNonTLSRelay), its hostname must match
// the AcceptedRelayPattern, and unless AllowPrivateRelay every address it
// resolves to must be public (common/sdp.IsLocal). The connection is made to
// an address that passed the check, so a name cannot be re-resolved to a
// private address between check and dial. The client's public IP, taken from
// its offer, is passed to the relay as the client_ip query parameter.
//
// # Data path
//
// DataChannels are detached (pion's SettingEngine.DetachDataChannels), so each
// session has exactly two goroutines, one per direction, each copying through
// a small pooled buffer. Writes to the client are paced by the DataChannel's
// buffered amount (high and low water marks), so a slow client cannot make the
// proxy buffer without bound. A session ends when the DataChannel closes, the
// relay closes, the peer connection fails, the proxy stops, or no byte has
// moved in either direction for InactivityTimeout.
//
// # NAT type
//
// When Config.NATProbeURL is set, the proxy probes its NAT type at start and
// every NATRetestInterval with Snowflake's probe protocol (a WebRTC offer
// POSTed as a ProxyPollResponse, answered with a ProxyAnswerRequest; see
// package natprobe). Until a probe succeeds the NAT type is "unknown".
package proxy
