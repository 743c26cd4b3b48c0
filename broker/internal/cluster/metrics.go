package cluster

import "github.com/prometheus/client_golang/prometheus"

// Result label values.
const (
	resultMatched     = "matched"
	resultNoProxies   = "no_proxies"
	resultTimedOut    = "timed_out"
	resultUnavailable = "unavailable" // the cluster link was down
	resultRetry       = "retry"       // the instance asked had no proxy left
	resultBad         = "bad_message"
	resultBusy        = "busy"
	resultDelivered   = "delivered"
	resultGone        = "client_gone"
)

// metrics are the cluster's Prometheus metrics. Every one carries the
// instance label, so that a Prometheus scraping several instances (with
// honor_labels) can add them up or tell them apart.
type metrics struct {
	requests  *prometheus.CounterVec // client polls sent to other instances, by result
	served    *prometheus.CounterVec // client polls taken from other instances, by result
	forwarded *prometheus.CounterVec // answers forwarded to the owner, by result
	latency   prometheus.Histogram   // cross-instance match: request to answer
	up        prometheus.GaugeFunc
	subs      prometheus.GaugeFunc
}

func newMetrics(instance string, up func() bool, subs func() int) *metrics {
	labels := prometheus.Labels{"instance": instance}
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "flurry_broker_cluster_requests_total",
			Help:        "Client polls without a local proxy offered to the other instances over NATS, by result.",
			ConstLabels: labels,
		}, []string{"result"}),
		served: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "flurry_broker_cluster_served_total",
			Help:        "Client polls taken from other instances and matched with a local proxy, by result.",
			ConstLabels: labels,
		}, []string{"result"}),
		forwarded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name:        "flurry_broker_cluster_answers_forwarded_total",
			Help:        "Proxy answers posted here for another instance's session and forwarded to it, by result.",
			ConstLabels: labels,
		}, []string{"result"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:        "flurry_broker_cluster_match_seconds",
			Help:        "Time from offering a client poll to the other instances to receiving the proxy's answer.",
			ConstLabels: labels,
			Buckets:     []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
		up: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "flurry_broker_cluster_up",
			Help:        "1 while the link to NATS is up, 0 while it is down.",
			ConstLabels: labels,
		}, func() float64 {
			if up() {
				return 1
			}
			return 0
		}),
		subs: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "flurry_broker_cluster_pools",
			Help:        "Pools (client NAT class and bridge) this instance has an idle proxy for and takes other instances' client polls for.",
			ConstLabels: labels,
		}, func() float64 { return float64(subs()) }),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.requests, m.served, m.forwarded, m.latency, m.up, m.subs} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
