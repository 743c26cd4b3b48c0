package relay

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Handshake failure reasons, the only values of the "reason" label.
const (
	failUpgrade  = "upgrade"   // not a valid WebSocket upgrade request
	failEOF      = "eof"       // closed before sending the token (e.g. a probe)
	failBadToken = "bad_token" // not the turbotunnel token
	failTimeout  = "timeout"   // token or ClientID not sent in time
	failError    = "error"     // other read error during the handshake
	failBadSeal  = "bad_seal"  // a sealed join header that does not authenticate, or a replayed one (seal.go)
	failJoin     = "join"      // a carrier its ClientID's session may not take (seal.go)
)

var failReasons = [...]string{failUpgrade, failEOF, failBadToken, failTimeout, failError, failBadSeal, failJoin}

// Rejection reasons (requests refused before any upgrade).
const (
	rejectPath  = "path"       // URL path other than Config.Path
	rejectLimit = "limit"      // MaxConns reached
	rejectAddr  = "addr_limit" // MaxCarriersPerAddr reached (503, or a close at accept)
)

// Reasons a carrier's first packet may not start a session (the carrier is
// closed), the only values of the "reason" label of sessions_refused_total.
const (
	refuseMalformed = "malformed"   // not a KCP packet that opens a Snowflake session
	refuseAddr      = "addr_budget" // NewSessionRate of the peer address spent
	refuseGlobal    = "global_cap"  // MaxSessions reached
)

var refuseReasons = [...]string{refuseMalformed, refuseAddr, refuseGlobal}

// counters are the relay's statistics, updated with atomics on the data
// path and exported through the Relay's own Prometheus registry.
type counters struct {
	connsTotal      atomic.Uint64
	connsActive     atomic.Int64 // carriers past the handshake
	connsParked     atomic.Int64 // of which parked (idle: no goroutine, no buffer)
	connsStandingBy atomic.Int64 // of which standing by for their client (standby.go)
	sessionsTotal   atomic.Uint64
	sessionsActive  atomic.Int64
	streamsTotal    atomic.Uint64
	streamsActive   atomic.Int64
	dialFailures    atomic.Uint64
	carrierIn       atomic.Uint64 // KCP packet bytes received from carriers
	carrierOut      atomic.Uint64 // KCP packet bytes sent on carriers
	streamUp        atomic.Uint64 // stream bytes client -> target
	streamDown      atomic.Uint64 // stream bytes target -> client
	handshakeFail   [len(failReasons)]atomic.Uint64
	rejectedPath    atomic.Uint64
	rejectedLimit   atomic.Uint64
	rejectedAddr    atomic.Uint64
	refused         [len(refuseReasons)]atomic.Uint64
	// sessionsReclaimed counts sessions closed for opening no stream.
	sessionsReclaimed atomic.Uint64
	// sessionsAbandoned counts sessions closed for having had no carrier
	// for Config.AbandonTimeout; sessionsSilent are live sessions whose
	// ClientID has had none for Config.ClientTimeout, and silentDrops the
	// packets dropped for them (see abandon.go).
	sessionsAbandoned atomic.Uint64
	sessionsSilent    atomic.Int64
	// sessionsResent counts the times a session's segments in flight
	// were all sent again at once (see Relay.resend).
	sessionsResent atomic.Uint64
	silentDrops    atomic.Uint64
	// sealFailures counts sealed packets that did not authenticate (each
	// ends its carrier: see seal.go).
	sealFailures atomic.Uint64
	// resendsHeld counts KCP segments cut out of packets because their
	// previous transmission is still on its way, resendsSent the resends
	// that went out, and segmentsSent all data segments that went out,
	// first transmissions and resends; all three once the session's resend
	// filter runs (resend.go).
	resendsHeld  atomic.Uint64
	resendsSent  atomic.Uint64
	segmentsSent atomic.Uint64
}

func (c *counters) refuse(reason string) {
	for i, r := range refuseReasons {
		if r == reason {
			c.refused[i].Add(1)
			return
		}
	}
}

func (c *counters) fail(reason string) {
	for i, r := range failReasons {
		if r == reason {
			c.handshakeFail[i].Add(1)
			return
		}
	}
}

// Stats is a snapshot of the relay's counters.
type Stats struct {
	Connections, ActiveConnections int64
	// ParkedConnections are the active connections that idle in the
	// relay's poller, without a goroutine or buffer of their own.
	ParkedConnections               int64
	Sessions, ActiveSessions        int64
	Streams, ActiveStreams          int64
	DialFailures                    uint64
	CarrierBytesIn, CarrierBytesOut uint64
	StreamBytesUp, StreamBytesDown  uint64
	// HandshakeFailures counts failed carrier handshakes by reason:
	// "upgrade", "eof", "bad_token", "timeout", "error".
	HandshakeFailures           map[string]uint64
	RejectedPath, RejectedLimit uint64
	// RejectedAddr counts connections refused by MaxCarriersPerAddr.
	RejectedAddr uint64
	// SessionsRefused counts carriers closed because their first packet
	// could not start a session, by reason: "malformed", "addr_budget",
	// "global_cap".
	SessionsRefused map[string]uint64
	// SessionsReclaimed counts sessions closed for opening no stream.
	SessionsReclaimed uint64
	// SessionsAbandoned counts sessions closed because their ClientID had
	// no carrier for Config.AbandonTimeout.
	SessionsAbandoned uint64
	// SessionsResent counts the times a session's segments in flight were
	// all sent again at once: a carrier of its ClientID closed while others
	// remained, or one came after none (a replaced proxy).
	SessionsResent uint64
	// SilentSessions are the live sessions whose ClientID has had no
	// carrier for Config.ClientTimeout: what KCP sends for them is dropped
	// (counted in SilentDrops), and they send no new data.
	SilentSessions int64
	SilentDrops    uint64
	// QueueDrops counts packets dropped because a turbotunnel queue was
	// full.
	QueueDrops uint64
	// ResendsHeld counts KCP data segments that the relay's KCP sent again
	// and the relay held back, because their previous transmission went out
	// on a carrier that is still alive, recently (see docs/relay.md);
	// ResendsSent those that went out again; SegmentsSent all data segments
	// that went to carriers, first transmissions and resends. The three
	// count from a session's first 100 ms of sending on.
	ResendsHeld  uint64
	ResendsSent  uint64
	SegmentsSent uint64
	// SealFailures counts sealed packets that did not authenticate; each
	// ended its carrier, none reached KCP.
	SealFailures uint64
	// Backends is each of Config.Backends' state, in their order.
	Backends []BackendStats
}

// newRegistry returns a registry exporting c, the Go runtime and the
// process, plus queue drops from drops.
func newRegistry(c *counters, drops func() float64) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	const ns = "flurry_relay"
	counter := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, f)
	}
	gauge := func(name, help string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: ns, Name: name, Help: help}, f)
	}
	u := func(a *atomic.Uint64) func() float64 { return func() float64 { return float64(a.Load()) } }
	i := func(a *atomic.Int64) func() float64 { return func() float64 { return float64(a.Load()) } }
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		counter("connections_total", "WebSocket connections that completed the turbotunnel handshake.", u(&c.connsTotal)),
		gauge("connections", "Open WebSocket connections past the handshake.", i(&c.connsActive)),
		gauge("connections_parked", "Open connections idle in the poller, without a goroutine or buffer.", i(&c.connsParked)),
		gauge("connections_standing_by", "Open connections whose client keeps them in reserve: they take none of its packets.", i(&c.connsStandingBy)),
		counter("sessions_total", "KCP sessions started.", u(&c.sessionsTotal)),
		gauge("sessions", "Live KCP sessions.", i(&c.sessionsActive)),
		counter("streams_total", "smux streams accepted.", u(&c.streamsTotal)),
		gauge("streams", "Open smux streams.", i(&c.streamsActive)),
		counter("dial_failures_total", "Streams whose target could not be reached.", u(&c.dialFailures)),
		counter("sessions_reclaimed_total", "KCP sessions closed because they opened no stream in time.", u(&c.sessionsReclaimed)),
		counter("sessions_abandoned_total", "KCP sessions closed because their client had no carrier for the abandon timeout.", u(&c.sessionsAbandoned)),
		counter("sessions_resent_total", "Times a KCP session's segments in flight were all sent again at once: a carrier of its client closed while others remained, or one came after none.", u(&c.sessionsResent)),
		gauge("sessions_silent", "Live KCP sessions whose client has had no carrier for the queue lifetime; they send nothing.", i(&c.sessionsSilent)),
		counter("silent_drops_total", "Packets of silent sessions dropped before they were queued.", u(&c.silentDrops)),
		counter("seal_failures_total", "Sealed packets that did not authenticate (each ended its carrier).", u(&c.sealFailures)),
		counter("queue_drops_total", "Packets dropped because a turbotunnel queue was full.", drops),
		counter("resends_held_total", "KCP data segments resent by the relay's KCP and held back, their previous transmission being on a live carrier.", u(&c.resendsHeld)),
		counter("resends_sent_total", "KCP data segments resent by the relay's KCP that went to carriers.", u(&c.resendsSent)),
		counter("segments_sent_total", "KCP data segments that went to carriers, first transmissions and resends.", u(&c.segmentsSent)),
	)
	for _, d := range []struct {
		dir string
		a   *atomic.Uint64
	}{{"in", &c.carrierIn}, {"out", &c.carrierOut}} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "carrier_bytes_total",
			Help:        "KCP packet bytes carried by WebSockets (in: from clients, out: to clients).",
			ConstLabels: prometheus.Labels{"direction": d.dir},
		}, u(d.a)))
	}
	for _, d := range []struct {
		dir string
		a   *atomic.Uint64
	}{{"upstream", &c.streamUp}, {"downstream", &c.streamDown}} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "stream_bytes_total",
			Help:        "Stream payload bytes (upstream: client to target, downstream: target to client).",
			ConstLabels: prometheus.Labels{"direction": d.dir},
		}, u(d.a)))
	}
	for idx, reason := range failReasons {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "handshake_failures_total",
			Help:        "WebSocket connections that failed the upgrade or the turbotunnel handshake, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, u(&c.handshakeFail[idx])))
	}
	for _, r := range []struct {
		reason string
		a      *atomic.Uint64
	}{{rejectPath, &c.rejectedPath}, {rejectLimit, &c.rejectedLimit}, {rejectAddr, &c.rejectedAddr}} {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "rejected_requests_total",
			Help:        "Connections or HTTP requests refused before the upgrade, by reason.",
			ConstLabels: prometheus.Labels{"reason": r.reason},
		}, u(r.a)))
	}
	for idx, reason := range refuseReasons {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "sessions_refused_total",
			Help:        "Carriers closed because their first packet could not start a KCP session, by reason.",
			ConstLabels: prometheus.Labels{"reason": reason},
		}, u(&c.refused[idx])))
	}
	return reg
}
