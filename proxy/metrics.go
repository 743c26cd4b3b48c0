package proxy

import (
	"net/http"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/flurrypt/flurry/messages"
)

// MetricsPath is where Run serves the metrics when Config.MetricsAddress is
// set (the same path as Snowflake's proxy).
const MetricsPath = "/internal/metrics"

// Failure reasons, the values of the "reason" label of
// flurry_proxy_connection_failures_total.
const (
	FailOffer       = "offer"       // the offer or its relay was refused
	FailAnswer      = "answer"      // WebRTC answer or broker /answer failed
	FailDataChannel = "datachannel" // the client never opened a DataChannel
	FailRelay       = "relay"       // the relay could not be reached
)

var failReasons = []string{FailOffer, FailAnswer, FailDataChannel, FailRelay}

// metrics holds the proxy's counters. Prometheus counters are atomic, and
// the plain atomics below feed the summary log line and Stats.
type metrics struct {
	registry    *prometheus.Registry
	clients     prometheus.Gauge
	connections prometheus.Counter
	failures    *prometheus.CounterVec
	toClient    prometheus.Counter
	fromClient  prometheus.Counter
	natType     *prometheus.GaugeVec

	nRelaying    atomic.Int64
	nConnections atomic.Uint64
	nFailures    atomic.Uint64
	nToClient    atomic.Uint64
	nFromClient  atomic.Uint64
}

func newMetrics() *metrics {
	const ns, sub = "flurry", "proxy"
	m := &metrics{
		registry: prometheus.NewRegistry(),
		clients: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "connected_clients", Help: "Clients currently being relayed."}),
		connections: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "connections_total", Help: "Client sessions that reached the relay."}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "connection_failures_total", Help: "Client matches that did not become a relayed session, by reason."},
			[]string{"reason"}),
		toClient: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "traffic_inbound_bytes_total", Help: "Bytes relayed from relays to clients."}),
		fromClient: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Subsystem: sub,
			Name: "traffic_outbound_bytes_total", Help: "Bytes relayed from clients to relays."}),
		natType: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub,
			Name: "nat_type", Help: "1 for the proxy's current NAT type, 0 for the others."}, []string{"type"}),
	}
	m.registry.MustRegister(m.clients, m.connections, m.failures, m.toClient, m.fromClient, m.natType)
	for _, r := range failReasons {
		m.failures.WithLabelValues(r)
	}
	m.setNAT(messages.NATUnknown)
	return m
}

func (m *metrics) setNAT(t string) {
	for _, v := range []string{messages.NATUnknown, messages.NATRestricted, messages.NATUnrestricted} {
		g := 0.0
		if v == t {
			g = 1
		}
		m.natType.WithLabelValues(v).Set(g)
	}
}

func (m *metrics) failed(reason string) {
	m.nFailures.Add(1)
	m.failures.WithLabelValues(reason).Inc()
}

func (m *metrics) connected() {
	m.nConnections.Add(1)
	m.connections.Inc()
	m.clients.Inc()
	m.nRelaying.Add(1)
}

func (m *metrics) disconnected() {
	m.clients.Dec()
	m.nRelaying.Add(-1)
}

func (m *metrics) addToClient(n int) {
	m.nToClient.Add(uint64(n))
	m.toClient.Add(float64(n))
}

func (m *metrics) addFromClient(n int) {
	m.nFromClient.Add(uint64(n))
	m.fromClient.Add(float64(n))
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}

// Stats is a snapshot of a proxy's counters since it was created.
type Stats struct {
	Clients         int    // client slots held (polling, connecting or relaying)
	Relaying        int    // sessions currently relaying
	Connections     uint64 // sessions that reached the relay
	Failures        uint64 // matches that did not
	BytesToClient   uint64 // relay → client
	BytesFromClient uint64 // client → relay
}
